"""The controller emulator: controller.py's event loop, context.py's shared state, one module per znode it watches
and pure decision modules (leadership, election, reassign, deletion)."""
