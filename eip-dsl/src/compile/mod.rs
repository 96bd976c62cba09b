//! Compiling a plan into a running flow. (Stub: being written.)
