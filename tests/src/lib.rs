//! Cross-crate integration tests (in `tests/`) and the book's chapters, compiled and run as doc tests.
