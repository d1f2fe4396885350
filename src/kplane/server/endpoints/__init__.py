"""HTTP endpoints: request parsing, content negotiation, one module per kind of handler, discovery,
OpenAPI and Table output. Handlers call the registry; they never touch storage directly."""
