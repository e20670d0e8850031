"""The one exception for "the agent asked for something wrong", shown to it as an ``isError`` result."""


class ToolError(Exception):
    """A tool failed because of its input or the state of the notebook.

    The message is what the agent reads: it says what was wrong and how to recover.
    Nothing has been changed when this is raised.
    """
