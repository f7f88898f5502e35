"""cartotheca.catalogue: resources, the query language, permissions, accounts."""
