"""Scale queue workers by queue length, not CPU: the ``QueueScaler`` operator.

A worker pool draining a Redis list is busy exactly when the list is long; its CPU says little
until the workers are already saturated. ``QueueScaler`` (``crd``) names a Deployment, a Redis URL
and list key, messages per replica, min/max replicas and a cool-down; the controller
(``controller``) reads ``LLEN`` through a minimal RESP client (``resp``) and scales the Deployment
through its ``scale`` subresource, retrying conflicts, reporting what it saw and did in status and
Events. ``benchmarks/queue_vs_hpa.py`` compares it with the HorizontalPodAutoscaler on one bursty
workload.
"""
