"""Running untrusted code: the OS boundary (isolation: bubblewrap), the child process and its
limits (process, lifeline), the checks before anything runs (policy, static_check,
resolved_check, loader), and the phases every backend shares inside the child (child,
reference, kernel, compare, arrays). Modules here import nothing heavy at module level that
the child's entry needs first."""
