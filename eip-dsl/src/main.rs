//! The `eip` command-line tool. (Stub: being written.)

fn main() {}
