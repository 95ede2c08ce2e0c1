"""Decision methods compared in the backtests; ``registry.METHODS`` maps method ids to factories."""
