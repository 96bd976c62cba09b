//! The inbound file adapter on a directory other users may write in: it never follows a
//! symlink it did not make, and uses as its claim, done and error directories only directories
//! owned by its own user. The tests run as root and play the other user with uid 65534
//! (`nobody`) and with symlinks to a directory only root may enter.

#![cfg(all(feature = "file", unix))]

use std::fs;
use std::os::unix::fs::{PermissionsExt, chown, symlink};
use std::path::Path;
use std::time::Duration;

use eip_adapters::file::FileSource;
use eip_core::channel::PointToPoint;

mod support;
use support::{TempDir, names, receive};

/// Waits until `cond` holds, for 10 s at most.
async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("not within 10 s: {what}");
}

/// A directory only root may enter, as the other user's target.
fn root_only(dir: &TempDir) -> std::path::PathBuf {
    let private = dir.join("root-only");
    fs::create_dir(&private).unwrap();
    fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).unwrap();
    private
}

/// Starts an adapter on `watched` (files over 10 bytes refused) and says how it ended within
/// 5 s: `None` if it is still running.
async fn start(watched: &Path) -> Option<String> {
    let channel = PointToPoint::new("files", 10).unwrap();
    let config = FileSource::builder(watched)
        .max_size(10)
        .poll_interval(Duration::from_millis(50))
        .build()
        .unwrap();
    let run = FileSource::new(config, channel.sender()).run_until(std::future::pending());
    match tokio::time::timeout(Duration::from_secs(5), run).await {
        Ok(Ok(())) => Some("ended Ok".into()),
        Ok(Err(error)) => Some(error.to_string()),
        Err(_) => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_directory_that_is_a_symlink_is_refused_at_start_and_nothing_goes_through_it() {
    let dir = TempDir::new("trust-link");
    let private = root_only(&dir);
    let watched = dir.join("in");
    fs::create_dir(&watched).unwrap();
    symlink(&private, watched.join(".error")).unwrap();
    fs::write(watched.join("big"), "more than ten bytes").unwrap();

    let ended = start(&watched).await;
    assert!(
        names(&private).is_empty(),
        "moved or created through the link: {:?}",
        names(&private)
    );
    let ended = ended.expect("the adapter refuses to start");
    assert!(
        ended.contains(".error` is refused: is a symbolic link"),
        "{ended}"
    );
    assert_eq!(
        fs::read_to_string(watched.join("big")).unwrap(),
        "more than ten bytes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_directory_owned_by_another_user_is_refused_at_start() {
    let dir = TempDir::new("trust-owner");
    let watched = dir.join("in");
    fs::create_dir_all(watched.join(".error")).unwrap();
    chown(watched.join(".error"), Some(65534), Some(65534)).unwrap();
    fs::write(watched.join("big"), "more than ten bytes").unwrap();

    let ended = start(&watched).await;
    assert!(
        names(&watched.join(".error")).is_empty(),
        "written into the other user's directory"
    );
    let ended = ended.expect("the adapter refuses to start");
    assert!(
        ended.contains("is owned by uid 65534, not eip's uid 0"),
        "{ended}"
    );
    assert!(watched.join("big").exists(), "the file stays where it was");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_directory_swapped_for_a_symlink_while_running_is_refused_and_the_file_stays() {
    let dir = TempDir::new("trust-swap");
    let private = root_only(&dir);
    let watched = dir.join("in");
    let channel = PointToPoint::new("files", 10).unwrap();
    let config = FileSource::builder(&watched)
        .max_size(10)
        .poll_interval(Duration::from_millis(50))
        .build()
        .unwrap();
    let source = FileSource::new(config, channel.sender()).spawn();
    fs::create_dir_all(&watched).unwrap();
    fs::write(watched.join("first"), "ok").unwrap();
    assert_eq!(receive(&channel, 1).await[0].payload().as_ref(), b"ok");

    // The other user swaps the error directory for a link and drops a file it will refuse.
    fs::rename(watched.join(".error"), dir.join("error-aside")).unwrap();
    symlink(&private, watched.join(".error")).unwrap();
    fs::write(watched.join("big"), "more than ten bytes").unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await; // ten poll intervals
    assert!(
        names(&private).is_empty(),
        "moved or created through the link: {:?}",
        names(&private)
    );
    assert!(watched.join("big").exists(), "the file stays where it was");
    assert!(!source.is_finished(), "the adapter goes on");

    // Put right, the file goes where it should.
    fs::remove_file(watched.join(".error")).unwrap();
    fs::rename(dir.join("error-aside"), watched.join(".error")).unwrap();
    eventually("the refused file in the error directory", || {
        watched.join(".error/big.error").exists()
    })
    .await;
    source.shutdown().await.unwrap();
    assert!(names(&private).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_dropped_in_the_watched_directory_goes_to_the_error_directory_unfollowed() {
    let dir = TempDir::new("trust-dropped-link");
    let private = root_only(&dir);
    fs::write(private.join("secret"), "root's").unwrap();
    let watched = dir.join("in");
    fs::create_dir(&watched).unwrap();
    symlink(private.join("secret"), watched.join("link")).unwrap();
    let channel = PointToPoint::new("files", 10).unwrap();
    let config = FileSource::builder(&watched)
        .poll_interval(Duration::from_millis(50))
        .build()
        .unwrap();
    let source = FileSource::new(config, channel.sender()).spawn();

    eventually("the link in the error directory", || {
        watched.join(".error/link.error").exists()
    })
    .await;
    source.shutdown().await.unwrap();
    let moved = fs::symlink_metadata(watched.join(".error/link")).unwrap();
    assert!(moved.file_type().is_symlink(), "the link itself was moved");
    let note = fs::read_to_string(watched.join(".error/link.error")).unwrap();
    assert!(note.contains("symbolic link"), "{note}");
    assert_eq!(channel.stats().depth, 0, "nothing read through it");
    assert_eq!(
        fs::read_to_string(private.join("secret")).unwrap(),
        "root's"
    );
    assert_eq!(names(&private), ["secret"]);
}
