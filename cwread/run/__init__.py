"""A question's run: the session that holds a book open, the plan resolved before any model
call, the stages that carry it out (find, the Finder, packing, the Interpreter, the checks),
and a question over a whole library."""
