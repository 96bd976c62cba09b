//! Checking a flow as a whole. (Stub: being written.)
