"""API Priority and Fairness (``flowcontrol.apiserver.k8s.io/v1``): the bootstrap configuration
(``bootstrap``), FlowSchema matching (``matching``), per-priority-level fair queuing
(``queueset``) and the configuration the filter consults (``config``). Pure and loop-bound: no
storage access; the server feeds ``config.FlowControl`` every FlowSchema and
PriorityLevelConfiguration write."""
