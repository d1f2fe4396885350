"""The web dashboard ``kplane serve`` serves at ``/dashboard``: a page of plain ES modules and CSS
(``static/``, shipped in the package, no build step) that reads the cluster through the API itself,
with the signed-in user's credentials, so RBAC decides what it shows.

Only the page and its assets are public (``assets``); every datum is an API request. The filter that
serves them is ``kplane.server.filters.dashboard``.
"""
