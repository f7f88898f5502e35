"""cartotheca.tasks: the execution engine, its worker backends, and the jobs it runs."""
