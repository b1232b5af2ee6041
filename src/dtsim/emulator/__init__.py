"""The emulator: real PyTorch distributed training (gloo) between processes in network namespaces
joined by links shaped with tc, with dtsim's prediction beside every measurement. Needs root and the
`emulator` extra (torch). CLI: `dtsim emulate`."""
