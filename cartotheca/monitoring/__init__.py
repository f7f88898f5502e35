"""cartotheca.monitoring: request capture, the collection cycle, metric queries and alerts.

    capture.py        pure ASGI middleware: each request becomes a tuple in an in-memory buffer
    classify.py       path and OWS parameters → service, event type and resources concerned
    recording.py      writes buffered requests (and server errors) as request events
    aggregation.py    one service period of request events → metric values
    hosts.py          CPU, memory, disks and network interfaces through psutil
    collector.py      the cycle (flush, host sample, aggregate, notify, clean) and its thread
    queries.py        hosts, services, resources, labels, metric_data
    exceptions.py     captured server errors
    notifications.py  checks: creation, the configuration form, evaluation and e-mail
    configuration.py  built-in metrics and the services set up from the settings
"""
