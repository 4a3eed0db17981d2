"""The train loop's configuration error, below every module that raises it (config, tokenizers, data)."""


class ConfigError(ValueError):
    """A config value (or a file it names) that cannot work; the message names the key and the fix."""
