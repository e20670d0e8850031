"""Stories across the packages: a whole server, its start, a hostile or clumsy agent, the harness."""
