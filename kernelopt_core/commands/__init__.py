"""The command line's commands, one module per group of them; cli.py assembles the group.
The built-in commands that the plugin host registers (``campaign``, ``apply``/``revert``,
``watch``, ``profile``) reach the run machinery through their click context
(common.Shell), never by importing cli.py or the plugin host: those load them."""
