//! Reading a flow file. (Stub: being written.)
