"""What several commands share, apart from the commands themselves (one module each in `tracevals.cli`):
the options and printing every data command has (`output`: `--lake`, `--format`, tables, progress bars),
the time grammar of `--since` / `--until` (`times`), production reports and gates (`production`), and the
variance attribution of `run` and `demo` (`variance`)."""
