"""Work queues for controllers: the client-go ``util/workqueue`` semantics on asyncio.

``Queue`` deduplicates and never hands one item to two workers at once; ``DelayingQueue`` adds
``add_after``; ``RateLimitingQueue`` adds per-item retry delays from a ``RateLimiter``. Informer
event handlers put keys in; a controller's worker tasks take them out. Metrics use the upstream
names once a provider is set (``metrics.set_provider(metrics.prometheus_provider())``).
"""

from kplane.workqueue import metrics
from kplane.workqueue.delaying import DelayingQueue
from kplane.workqueue.queue import Queue, ShutDown
from kplane.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)
from kplane.workqueue.rate_limiting import RateLimitingQueue

__all__ = [
    "BucketRateLimiter",
    "DelayingQueue",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "Queue",
    "RateLimiter",
    "RateLimitingQueue",
    "ShutDown",
    "WithMaxWaitRateLimiter",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
    "metrics",
]
