"""For the agent's tests: its token, and a simulated GPU host as the agent's source."""

TOKEN = "agent-token-123"


def simulated(config, gpus: int = 2):
    """A source for the agent's loop in tests: the demo's simulated host for the config's
    services (the agent itself never imports the demo)."""
    from demo.simulator import Simulator

    return Simulator(host=config.host, services=config.services, gpus=gpus)
