//! Drawing a flow. (Stub: being written.)
