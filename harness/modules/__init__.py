"""The reference ExecModules of the durable decide-act-observe loop."""
