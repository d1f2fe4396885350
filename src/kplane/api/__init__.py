"""Pure API values shared by server and client: group/version/kind, errors <-> Status, selectors,
identifier syntax, patches, schemas and the resource catalog. Nothing here does I/O."""
