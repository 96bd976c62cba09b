//! The adapter's directories held open while a batch is claimed, read and settled.
//!
//! Claims, reads and moves name a file relative to its directory's handle (`renameat`,
//! `openat`), so the kernel looks up one name, not every component of the directory's path,
//! for each of the three or four operations a file costs. A batch opens its handles afresh, so
//! a directory replaced under the adapter is used from the next batch on. Where a handle can
//! not be opened (or off Unix), the operations fall back to full paths.

use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

use super::config::{FileSourceConfig, WhenDone};

/// A directory, by path and, where it could be opened, by handle.
pub(super) struct Dir {
    path: PathBuf,
    #[cfg(unix)]
    fd: Option<std::os::fd::OwnedFd>,
}

/// The watched, claim and done directories of one adapter, held open for a batch.
pub(super) struct Dirs {
    pub(super) watched: Dir,
    pub(super) claims: Dir,
    /// `None` when accepted files are deleted.
    pub(super) done: Option<Dir>,
}

impl Dirs {
    pub(super) fn open(config: &FileSourceConfig) -> Dirs {
        Dirs {
            watched: Dir::open(&config.dir),
            claims: Dir::open(&config.claim_dir),
            done: match &config.when_done {
                WhenDone::MoveTo(done) => Some(Dir::open(done)),
                WhenDone::Delete => None,
            },
        }
    }
}

impl Dir {
    /// Opens `path` as a directory handle; without one, operations use full paths.
    pub(super) fn open(path: &Path) -> Dir {
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            let fd = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY)
                .open(path)
                .map(std::os::fd::OwnedFd::from);
            Dir {
                path: path.to_owned(),
                fd: fd.ok(),
            }
        }
        #[cfg(not(unix))]
        Dir {
            path: path.to_owned(),
        }
    }

    /// The full path of `name` in this directory.
    pub(super) fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Opens `name` for reading without following a symlink and without blocking on a FIFO.
    pub(super) fn open_file(&self, name: &str) -> io::Result<File> {
        #[cfg(unix)]
        if let Some(fd) = &self.fd {
            use std::os::fd::{AsRawFd, FromRawFd};
            let c_name = c_name(name)?;
            let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
            // SAFETY: `fd` is an open directory handle and `c_name` a NUL-terminated name,
            // both alive across the call.
            let opened = unsafe { libc::openat(fd.as_raw_fd(), c_name.as_ptr(), flags) };
            if opened < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `opened` is a fresh descriptor that nothing else owns.
            return Ok(unsafe { File::from_raw_fd(opened) });
        }
        let mut options = OpenOptions::new();
        options.read(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        }
        options.open(self.join(name))
    }

    /// Renames `from` in this directory to `to` in `target`, replacing what is there.
    pub(super) fn rename(&self, from: &str, target: &Dir, to: &str) -> io::Result<()> {
        #[cfg(unix)]
        if let (Some(from_fd), Some(to_fd)) = (&self.fd, &target.fd) {
            use std::os::fd::AsRawFd;
            let (c_from, c_to) = (c_name(from)?, c_name(to)?);
            // SAFETY: both handles are open directories and both names NUL-terminated, all
            // alive across the call.
            let renamed = unsafe {
                libc::renameat(
                    from_fd.as_raw_fd(),
                    c_from.as_ptr(),
                    to_fd.as_raw_fd(),
                    c_to.as_ptr(),
                )
            };
            return if renamed == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            };
        }
        fs::rename(self.join(from), target.join(to))
    }

    /// Renames `from` in this directory to `to` in `target` unless `to` exists (then
    /// `AlreadyExists`, and nothing moved). Atomic where the platform offers it (`renameat2`
    /// with `RENAME_NOREPLACE` on Linux); elsewhere, or on a file system without it, a look
    /// first and then the rename.
    pub(super) fn rename_no_replace(&self, from: &str, target: &Dir, to: &str) -> io::Result<()> {
        #[cfg(all(target_os = "linux", any(target_env = "gnu", target_env = "musl")))]
        if let (Some(from_fd), Some(to_fd)) = (&self.fd, &target.fd) {
            use std::os::fd::AsRawFd;
            let (c_from, c_to) = (c_name(from)?, c_name(to)?);
            // SAFETY: both handles are open directories and both names NUL-terminated, all
            // alive across the call.
            let renamed = unsafe {
                libc::renameat2(
                    from_fd.as_raw_fd(),
                    c_from.as_ptr(),
                    to_fd.as_raw_fd(),
                    c_to.as_ptr(),
                    libc::RENAME_NOREPLACE,
                )
            };
            if renamed == 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if !matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) {
                return Err(e);
            }
            // The file system (or kernel) does not know RENAME_NOREPLACE: look, then rename.
        }
        if target.join(to).symlink_metadata().is_ok() {
            return Err(ErrorKind::AlreadyExists.into());
        }
        self.rename(from, target, to)
    }

    /// Deletes `name` from this directory.
    pub(super) fn remove(&self, name: &str) -> io::Result<()> {
        fs::remove_file(self.join(name))
    }
}

#[cfg(unix)]
fn c_name(name: &str) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(name).map_err(|e| io::Error::new(ErrorKind::InvalidInput, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(label: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "eip-file-dir-{label}-{}-{}",
            std::process::id(),
            eip_core::MessageId::new()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn rename_no_replace_leaves_an_existing_target_alone() {
        let dir = scratch("noreplace");
        let handle = Dir::open(&dir);
        fs::write(dir.join("a"), "a").unwrap();
        fs::write(dir.join("b"), "b").unwrap();
        let refused = handle.rename_no_replace("a", &handle, "b").unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::AlreadyExists);
        assert_eq!(fs::read_to_string(dir.join("a")).unwrap(), "a");
        assert_eq!(fs::read_to_string(dir.join("b")).unwrap(), "b");
        handle.rename_no_replace("a", &handle, "c").unwrap();
        assert!(!dir.join("a").exists());
        assert_eq!(fs::read_to_string(dir.join("c")).unwrap(), "a");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_directory_that_can_not_be_opened_is_used_by_path() {
        let dir = scratch("by-path");
        let missing = Dir::open(&dir.join("not-yet"));
        fs::create_dir_all(dir.join("not-yet")).unwrap();
        let there = Dir::open(&dir);
        fs::write(dir.join("a"), "a").unwrap();
        there.rename("a", &missing, "b").unwrap();
        assert_eq!(fs::read_to_string(dir.join("not-yet/b")).unwrap(), "a");
        let mut read = String::new();
        std::io::Read::read_to_string(&mut missing.open_file("b").unwrap(), &mut read).unwrap();
        assert_eq!(read, "a");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_not_opened() {
        let dir = scratch("symlink");
        fs::write(dir.join("target"), "secret").unwrap();
        std::os::unix::fs::symlink(dir.join("target"), dir.join("link")).unwrap();
        assert!(Dir::open(&dir).open_file("link").is_err());
        fs::remove_dir_all(&dir).unwrap();
    }
}
