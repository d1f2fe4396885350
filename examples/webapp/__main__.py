"""``python -m examples.webapp``: run the WebApp operator against ``$KUBECONFIG``'s cluster."""

import asyncio

from examples.webapp import operator
from kplane.runtime import log

log.configure()  # each reconcile's lines carry controller, namespace, name and reconcileID
asyncio.run(operator.main())
