"""``python -m examples.webapp``: run the WebApp operator against ``$KUBECONFIG``'s cluster."""

import asyncio
import logging

from examples.webapp import operator

logging.basicConfig(level=logging.INFO)
asyncio.run(operator.main())
