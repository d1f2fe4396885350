"""Request filters (aiohttp middlewares), one per module; ``chain`` lists them in request order."""
