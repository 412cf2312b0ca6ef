"""The agents: the Finders (the trained judge among them), the Interpreter, and what they share (prompts, the reply format and its parser)."""
