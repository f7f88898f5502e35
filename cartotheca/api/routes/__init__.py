"""cartotheca.api.routes: one module per resource family."""
