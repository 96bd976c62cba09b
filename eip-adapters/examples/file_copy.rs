//! A directory → a channel → another directory: the file channel adapter both ways.
//!
//! `cargo run -p eip-adapters --example file_copy [IN OUT]` drops three files into `IN`
//! (default: a new temporary directory), lets a `FileSource` put them on a point-to-point
//! channel and a consumer driving a `FileSink` write them to `OUT` under
//! `{header.file-name}`, then prints what arrived and stops. The originals end up in
//! `IN/.done`.

#[cfg(feature = "file")]
#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    use std::time::Duration;

    use eip_adapters::file::{FileSink, FileSource};
    use eip_core::channel::PointToPoint;
    use eip_core::endpoint::Consumer;

    let mut args = std::env::args_os().skip(1);
    let base = std::env::temp_dir().join(format!("eip-file-copy-{}", std::process::id()));
    let inbox = args.next().map_or_else(|| base.join("in"), Into::into);
    let outbox = args.next().map_or_else(|| base.join("out"), Into::into);

    std::fs::create_dir_all(&inbox)?;
    let copies = PointToPoint::new("copies", 16)?;
    let source_config = FileSource::builder(&inbox).glob("*.txt").build()?;
    let source = FileSource::new(source_config, copies.sender()).spawn();
    let sink_config = FileSink::builder(&outbox)
        .name_template("{header.file-name}")
        .build()?;
    let consumer = Consumer::new(copies.receiver(), FileSink::new(sink_config)?).spawn();

    for name in ["a.txt", "b.txt", "c.txt"] {
        // Written under a dot name and renamed in, so the adapter never sees half a file.
        let temp = inbox.join(format!(".{name}.part"));
        std::fs::write(&temp, format!("contents of {name}\n"))?;
        std::fs::rename(&temp, inbox.join(name))?;
    }
    for _ in 0..500 {
        if ["a.txt", "b.txt", "c.txt"]
            .iter()
            .all(|n| outbox.join(n).exists())
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    source.shutdown().await?;
    consumer.shutdown().await;
    for name in ["a.txt", "b.txt", "c.txt"] {
        let copied = std::fs::read_to_string(outbox.join(name))?;
        println!("{} -> {}: {}", name, outbox.display(), copied.trim_end());
    }
    Ok(())
}

#[cfg(not(feature = "file"))]
fn main() {
    eprintln!("file_copy needs the `file` feature of eip-adapters");
}
