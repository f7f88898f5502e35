"""cartotheca.api: the HTTP layer; thin routes over the domain."""
