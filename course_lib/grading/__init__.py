"""The exercise graders: one engine (``core`` lists its parts), one small module per exercise."""
