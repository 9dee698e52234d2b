"""What to change on a host: the checks (hostchecks.py), the findings weighed against the requirement and the
measured effects (advise.py), an IOC's threads against its interrupt threads (iocpath.py). Pure."""
