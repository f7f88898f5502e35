"""cartotheca.tasks.backends: where executions run (in-process threads or Celery workers)."""
