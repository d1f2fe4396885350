"""Admission: the built-in plugins of kube-apiserver's chain, one module each, in upstream's order.

``chain.build`` turns the enabled plugins into the ``admitting.Admission`` callbacks the registry
is constructed with; the registry never imports this package.
"""
