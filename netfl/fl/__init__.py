"""The federated-learning side of the simulation: devices and the server's protocol."""
