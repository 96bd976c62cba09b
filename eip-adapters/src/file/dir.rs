//! Directories held open by handle, and the rule for trusting them.
//!
//! The inbound adapter holds its directories open while a batch is claimed, read and settled;
//! the outbound one the directory it writes a file in.
//!
//! **What is trusted.** The watched directory is opened by the path the operator configured
//! (a symlink in that path is the operator's and is followed) and may belong to anyone: a
//! drop directory is often shared. The adapter's own directories (claim, done, error) are
//! different: the adapter moves files into them and writes `NAME.error` notes there, so anyone
//! who could swap one for a symlink could make the adapter move a file, or create one, where
//! that user may not. Each of them is therefore opened, component by component below the
//! watched directory (or below its configured parent if it lies elsewhere), with `O_NOFOLLOW`
//! and `O_DIRECTORY`, and must be a directory owned by the adapter's effective user; anything
//! else is [`FileError::Untrusted`] ("is a symbolic link", "is owned by uid 65534, not eip's
//! uid 0"), and nothing is moved into it nor created there. Missing directories are made,
//! when the adapter starts, by this user.
//!
//! Claims, reads and moves then name a file relative to its directory's handle (`openat`,
//! `renameat`, `unlinkat`), so no path is looked up again between the check and the use. A
//! batch opens and checks its handles afresh, so a directory swapped while the adapter runs is
//! refused at its next use, and the files stay where they are.

#[cfg(unix)]
use std::fs::File;
#[cfg(unix)]
use std::io::{self, ErrorKind};
use std::path::{Component, Path, PathBuf};

use crate::file::FileError;

/// A directory, by path (for what is said of it) and by handle (for what is done in it).
pub(super) struct Dir {
    path: PathBuf,
    #[cfg(unix)]
    handle: File,
}

/// Whether a missing directory is made (at start) or refused (while running).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Missing {
    Create,
    Refuse,
}

impl Dir {
    /// The full path of `name` in this directory, for what is said of it.
    pub(super) fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

#[cfg(unix)]
mod unix {
    use std::ffi::CString;
    use std::fs::{self, File};
    use std::io::{self, ErrorKind};
    use std::os::fd::{AsRawFd, FromRawFd};
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    use std::path::{Component, Path};

    use super::{Dir, Missing, answered, c_name, refused, split_below};
    use crate::file::FileError;

    impl Dir {
        /// A directory by its configured path (trusted as the operator gave it: a symlink in it
        /// is followed); made if missing and so asked.
        pub(in crate::file) fn by_path(path: &Path, missing: Missing) -> Result<Dir, FileError> {
            if missing == Missing::Create {
                fs::create_dir_all(path).map_err(FileError::io(path, "create"))?;
            }
            let handle = fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
                .open(path)
                .map_err(FileError::io(path, "open"))?;
            Ok(Dir {
                path: path.to_owned(),
                handle,
            })
        }

        /// One of the adapter's own directories: each component below `watched` (or below
        /// the path's parent, for one elsewhere) opened without following a symlink, and
        /// each a directory owned by this user.
        pub(in crate::file) fn own(
            watched: &Dir,
            path: &Path,
            missing: Missing,
        ) -> Result<Dir, FileError> {
            let (base, rest) = split_below(&watched.path, path);
            if rest.as_os_str().is_empty() {
                return Err(refused(path, "names no directory of its own".into()));
            }
            let mut dir = match base {
                None => watched.try_clone()?,
                Some(base) => Dir::by_path(base, missing)?,
            };
            for component in rest.components() {
                let Component::Normal(name) = component else {
                    return Err(refused(path, "has a `.` or `..` component".into()));
                };
                let name = name
                    .to_str()
                    .ok_or_else(|| refused(path, "is not UTF-8".into()))?;
                dir = dir.child(name, missing)?;
            }
            Ok(dir)
        }

        fn try_clone(&self) -> Result<Dir, FileError> {
            Ok(Dir {
                path: self.path.clone(),
                handle: self
                    .handle
                    .try_clone()
                    .map_err(FileError::io(&self.path, "open"))?,
            })
        }

        /// `name` in this directory, opened without following a symlink, and owned by this
        /// user.
        fn child(&self, name: &str, missing: Missing) -> Result<Dir, FileError> {
            let dir = self.subdir(name, missing)?;
            let meta = dir
                .handle
                .metadata()
                .map_err(FileError::io(&dir.path, "stat"))?;
            // SAFETY: geteuid has no preconditions and can not fail.
            let euid = unsafe { libc::geteuid() };
            if meta.uid() != euid {
                let reason = format!("is owned by uid {}, not eip's uid {euid}", meta.uid());
                return Err(refused(&dir.path, reason));
            }
            Ok(dir)
        }

        /// `name` in this directory, opened without following a symlink: a directory, made
        /// if missing and so asked, whoever owns it.
        pub(in crate::file) fn subdir(
            &self,
            name: &str,
            missing: Missing,
        ) -> Result<Dir, FileError> {
            let path = self.path.join(name);
            let c = c_name(name).map_err(FileError::io(&path, "open"))?;
            let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
            let mut opened = self.openat(&c, flags, 0);
            if missing == Missing::Create
                && opened
                    .as_ref()
                    .is_err_and(|e| e.kind() == ErrorKind::NotFound)
            {
                // SAFETY: the handle is an open directory and `c` a NUL-terminated name.
                let made =
                    answered(unsafe { libc::mkdirat(self.handle.as_raw_fd(), c.as_ptr(), 0o777) });
                if let Err(e) = made
                    && e.kind() != ErrorKind::AlreadyExists
                {
                    return Err(FileError::io(&path, "create")(e));
                }
                opened = self.openat(&c, flags, 0);
            }
            match opened {
                Ok(handle) => Ok(Dir { path, handle }),
                Err(e) => Err(self.why_not_a_dir(&c, &path, e)),
            }
        }

        /// Why `name` could not be opened as a directory: a symlink, not a directory, or the
        /// system's error.
        fn why_not_a_dir(&self, c: &CString, path: &Path, e: io::Error) -> FileError {
            match e.raw_os_error() {
                Some(libc::ELOOP) => refused(path, "is a symbolic link".into()),
                Some(libc::ENOTDIR) => match self.lstat_mode(c) {
                    Some(mode) if mode & libc::S_IFMT == libc::S_IFLNK => {
                        refused(path, "is a symbolic link".into())
                    }
                    _ => refused(path, "is not a directory".into()),
                },
                _ => FileError::io(path, "open")(e),
            }
        }

        fn lstat_mode(&self, c: &CString) -> Option<libc::mode_t> {
            let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
            // SAFETY: the handle is an open directory, `c` a NUL-terminated name, and `stat`
            // room for the answer, which is read only if the call succeeded.
            let done = unsafe {
                libc::fstatat(
                    self.handle.as_raw_fd(),
                    c.as_ptr(),
                    stat.as_mut_ptr(),
                    libc::AT_SYMLINK_NOFOLLOW,
                )
            };
            // SAFETY: fstatat filled `stat` when it returned 0.
            (done == 0).then(|| unsafe { stat.assume_init() }.st_mode)
        }

        fn openat(&self, c: &CString, flags: i32, mode: libc::c_uint) -> io::Result<File> {
            // SAFETY: the handle is an open directory and `c` a NUL-terminated name, both
            // alive across the call.
            let fd = unsafe { libc::openat(self.handle.as_raw_fd(), c.as_ptr(), flags, mode) };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `fd` is a fresh descriptor that nothing else owns.
            Ok(unsafe { File::from_raw_fd(fd) })
        }

        /// Opens `name` for reading without following a symlink and without blocking on a
        /// FIFO.
        pub(in crate::file) fn open_file(&self, name: &str) -> io::Result<File> {
            let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
            self.openat(&c_name(name)?, flags, 0)
        }

        /// Creates (or empties) the file `name` for writing, refusing a symlink there.
        pub(in crate::file) fn create_file(&self, name: &str) -> io::Result<File> {
            let flags = libc::O_WRONLY
                | libc::O_CREAT
                | libc::O_TRUNC
                | libc::O_NOFOLLOW
                | libc::O_NONBLOCK
                | libc::O_CLOEXEC;
            self.openat(&c_name(name)?, flags, 0o666)
        }

        /// Creates the file `name`, which must not exist, for writing.
        pub(in crate::file) fn create_new(&self, name: &str) -> io::Result<File> {
            let flags =
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
            self.openat(&c_name(name)?, flags, 0o666)
        }

        /// Opens `name` for appending, made if missing; a symlink there is refused (`ELOOP`).
        pub(in crate::file) fn open_append(&self, name: &str) -> io::Result<File> {
            let flags = libc::O_WRONLY
                | libc::O_APPEND
                | libc::O_CREAT
                | libc::O_NOFOLLOW
                | libc::O_NONBLOCK
                | libc::O_CLOEXEC;
            self.openat(&c_name(name)?, flags, 0o666)
        }

        /// Makes `to` in this directory a second name of `from`; `AlreadyExists` if taken.
        pub(in crate::file) fn link(&self, from: &str, to: &str) -> io::Result<()> {
            let (c_from, c_to) = (c_name(from)?, c_name(to)?);
            let fd = self.handle.as_raw_fd();
            // SAFETY: the handle is an open directory and both names NUL-terminated, all
            // alive across the call.
            answered(unsafe { libc::linkat(fd, c_from.as_ptr(), fd, c_to.as_ptr(), 0) })
        }

        /// Makes the renames and links made in this directory durable.
        pub(in crate::file) fn sync(&self) -> io::Result<()> {
            self.handle.sync_all()
        }

        /// Whether something (a symlink included) is called `name` here.
        pub(in crate::file) fn exists(&self, name: &str) -> bool {
            c_name(name).is_ok_and(|c| self.lstat_mode(&c).is_some())
        }

        /// Renames `from` in this directory to `to` in `target`, replacing what is there.
        pub(in crate::file) fn rename(&self, from: &str, target: &Dir, to: &str) -> io::Result<()> {
            let (c_from, c_to) = (c_name(from)?, c_name(to)?);
            // SAFETY: both handles are open directories and both names NUL-terminated, all
            // alive across the call.
            answered(unsafe {
                libc::renameat(
                    self.handle.as_raw_fd(),
                    c_from.as_ptr(),
                    target.handle.as_raw_fd(),
                    c_to.as_ptr(),
                )
            })
        }

        /// Renames `from` in this directory to `to` in `target` unless `to` exists (then
        /// `AlreadyExists`, and nothing moved). Atomic where the platform offers it
        /// (`renameat2` with `RENAME_NOREPLACE` on Linux); elsewhere, or on a file system
        /// without it, a look first and then the rename.
        pub(in crate::file) fn rename_no_replace(
            &self,
            from: &str,
            target: &Dir,
            to: &str,
        ) -> io::Result<()> {
            #[cfg(all(target_os = "linux", any(target_env = "gnu", target_env = "musl")))]
            {
                let (c_from, c_to) = (c_name(from)?, c_name(to)?);
                // SAFETY: both handles are open directories and both names NUL-terminated,
                // all alive across the call.
                let renamed = answered(unsafe {
                    libc::renameat2(
                        self.handle.as_raw_fd(),
                        c_from.as_ptr(),
                        target.handle.as_raw_fd(),
                        c_to.as_ptr(),
                        libc::RENAME_NOREPLACE,
                    )
                });
                let Err(e) = renamed else {
                    return Ok(());
                };
                if !matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) {
                    return Err(e);
                }
                // The file system (or kernel) does not know RENAME_NOREPLACE: look, then rename.
            }
            if target.exists(to) {
                return Err(ErrorKind::AlreadyExists.into());
            }
            self.rename(from, target, to)
        }

        /// Deletes `name` from this directory (a symlink itself, never what it points to).
        pub(in crate::file) fn remove(&self, name: &str) -> io::Result<()> {
            let c = c_name(name)?;
            // SAFETY: the handle is an open directory and `c` a NUL-terminated name.
            answered(unsafe { libc::unlinkat(self.handle.as_raw_fd(), c.as_ptr(), 0) })
        }
    }
}

#[cfg(not(unix))]
mod portable {
    //! Off Unix there are no directory handles: operations go by path, and the adapter's own
    //! directories are checked (a directory, not a symlink) when opened.
    use std::fs::{self, File, OpenOptions};
    use std::io::{self, ErrorKind};
    use std::path::Path;

    use super::{Dir, Missing, refused};
    use crate::file::FileError;

    impl Dir {
        pub(in crate::file) fn by_path(path: &Path, missing: Missing) -> Result<Dir, FileError> {
            if missing == Missing::Create {
                fs::create_dir_all(path).map_err(FileError::io(path, "create"))?;
            }
            Ok(Dir {
                path: path.to_owned(),
            })
        }

        pub(in crate::file) fn own(
            _watched: &Dir,
            path: &Path,
            missing: Missing,
        ) -> Result<Dir, FileError> {
            if missing == Missing::Create {
                fs::create_dir_all(path).map_err(FileError::io(path, "create"))?;
            }
            let meta = fs::symlink_metadata(path).map_err(FileError::io(path, "stat"))?;
            if meta.file_type().is_symlink() {
                return Err(refused(path, "is a symbolic link".into()));
            }
            if !meta.is_dir() {
                return Err(refused(path, "is not a directory".into()));
            }
            Ok(Dir {
                path: path.to_owned(),
            })
        }

        pub(in crate::file) fn open_file(&self, name: &str) -> io::Result<File> {
            File::open(self.join(name))
        }

        pub(in crate::file) fn create_file(&self, name: &str) -> io::Result<File> {
            File::create(self.join(name))
        }

        pub(in crate::file) fn exists(&self, name: &str) -> bool {
            self.join(name).symlink_metadata().is_ok()
        }

        pub(in crate::file) fn subdir(
            &self,
            name: &str,
            missing: Missing,
        ) -> Result<Dir, FileError> {
            let path = self.join(name);
            if missing == Missing::Create {
                fs::create_dir_all(&path).map_err(FileError::io(&path, "create"))?;
            }
            let meta = fs::symlink_metadata(&path).map_err(FileError::io(&path, "stat"))?;
            if meta.file_type().is_symlink() {
                return Err(refused(&path, "is a symbolic link".into()));
            }
            if !meta.is_dir() {
                return Err(refused(&path, "is not a directory".into()));
            }
            Ok(Dir { path })
        }

        pub(in crate::file) fn create_new(&self, name: &str) -> io::Result<File> {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(self.join(name))
        }

        pub(in crate::file) fn open_append(&self, name: &str) -> io::Result<File> {
            OpenOptions::new()
                .append(true)
                .create(true)
                .open(self.join(name))
        }

        pub(in crate::file) fn link(&self, from: &str, to: &str) -> io::Result<()> {
            fs::hard_link(self.join(from), self.join(to))
        }

        pub(in crate::file) fn sync(&self) -> io::Result<()> {
            Ok(())
        }

        pub(in crate::file) fn rename(&self, from: &str, target: &Dir, to: &str) -> io::Result<()> {
            fs::rename(self.join(from), target.join(to))
        }

        pub(in crate::file) fn rename_no_replace(
            &self,
            from: &str,
            target: &Dir,
            to: &str,
        ) -> io::Result<()> {
            if target.exists(to) {
                return Err(ErrorKind::AlreadyExists.into());
            }
            self.rename(from, target, to)
        }

        pub(in crate::file) fn remove(&self, name: &str) -> io::Result<()> {
            fs::remove_file(self.join(name))
        }
    }
}

/// Where to start opening `path` from, and the components below: the watched directory's
/// handle (`None`) when `path` lies under it, else the path's parent, trusted as configured.
fn split_below<'a>(watched: &Path, path: &'a Path) -> (Option<&'a Path>, &'a Path) {
    match path.strip_prefix(watched) {
        Ok(rest) if rest.components().all(|c| matches!(c, Component::Normal(_))) => (None, rest),
        _ => match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) => (Some(parent), Path::new(name)),
            _ => (Some(path), Path::new("")),
        },
    }
}

fn refused(path: &Path, reason: String) -> FileError {
    FileError::Untrusted {
        path: path.to_owned(),
        reason,
    }
}

/// A system call's answer: 0 is success, anything else the error in `errno`.
#[cfg(unix)]
fn answered(ret: libc::c_int) -> io::Result<()> {
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(unix)]
fn c_name(name: &str) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(name).map_err(|e| io::Error::new(ErrorKind::InvalidInput, e))
}

#[cfg(all(test, unix))]
mod tests {
    use std::fs;
    use std::os::unix::fs::{chown, symlink};

    use super::*;

    fn read_all(mut file: File) -> String {
        let mut out = String::new();
        io::Read::read_to_string(&mut file, &mut out).unwrap();
        out
    }

    fn scratch(label: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "eip-file-dir-{label}-{}-{}",
            std::process::id(),
            eip_core::MessageId::new()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn own(dir: &Path, sub: &str, missing: Missing) -> Result<Dir, FileError> {
        let watched = Dir::by_path(dir, Missing::Refuse).unwrap();
        Dir::own(&watched, &dir.join(sub), missing)
    }

    #[test]
    fn rename_no_replace_leaves_an_existing_target_alone() {
        let dir = scratch("noreplace");
        let handle = Dir::by_path(&dir, Missing::Refuse).unwrap();
        fs::write(dir.join("a"), "a").unwrap();
        fs::write(dir.join("b"), "b").unwrap();
        let refused = handle.rename_no_replace("a", &handle, "b").unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::AlreadyExists);
        assert_eq!(fs::read_to_string(dir.join("a")).unwrap(), "a");
        assert_eq!(fs::read_to_string(dir.join("b")).unwrap(), "b");
        handle.rename_no_replace("a", &handle, "c").unwrap();
        assert!(!dir.join("a").exists());
        assert_eq!(read_all(handle.open_file("c").unwrap()), "a");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn own_directories_are_made_component_by_component_and_then_found() {
        let dir = scratch("made");
        let made = own(&dir, "state/claims", Missing::Create).unwrap();
        assert!(dir.join("state/claims").is_dir());
        fs::write(dir.join("state/claims/a"), "a").unwrap();
        assert_eq!(read_all(made.open_file("a").unwrap()), "a");
        assert!(own(&dir, "state/claims", Missing::Refuse).is_ok());
        let missing = own(&dir, "not-yet", Missing::Refuse).err().unwrap();
        assert!(matches!(missing, FileError::Io { .. }), "{missing:?}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_own_directory_that_is_a_symlink_or_another_user_s_is_refused() {
        let dir = scratch("refused");
        let elsewhere = scratch("refused-target");
        symlink(&elsewhere, dir.join(".error")).unwrap();
        let link = own(&dir, ".error", Missing::Create)
            .err()
            .unwrap()
            .to_string();
        assert!(link.contains("is a symbolic link"), "{link}");
        // A symlinked component on the way is refused the same way.
        symlink(&elsewhere, dir.join("state")).unwrap();
        let on_the_way = own(&dir, "state/claims", Missing::Create).err().unwrap();
        assert!(on_the_way.to_string().contains("is a symbolic link"));
        assert!(
            fs::read_dir(&elsewhere).unwrap().next().is_none(),
            "nothing made there"
        );

        fs::create_dir(dir.join(".done")).unwrap();
        chown(dir.join(".done"), Some(65534), Some(65534)).unwrap();
        let theirs = own(&dir, ".done", Missing::Create)
            .err()
            .unwrap()
            .to_string();
        // SAFETY: geteuid has no preconditions.
        let euid = unsafe { libc::geteuid() };
        assert!(
            theirs.contains(&format!("is owned by uid 65534, not eip's uid {euid}")),
            "{theirs}"
        );
        fs::write(dir.join("plain"), "").unwrap();
        let file = own(&dir, "plain", Missing::Create)
            .err()
            .unwrap()
            .to_string();
        assert!(file.contains("is not a directory"), "{file}");
        fs::remove_dir_all(&dir).unwrap();
        fs::remove_dir_all(&elsewhere).unwrap();
    }

    #[test]
    fn a_symlink_is_not_opened() {
        let dir = scratch("symlink");
        fs::write(dir.join("target"), "secret").unwrap();
        symlink(dir.join("target"), dir.join("link")).unwrap();
        let handle = Dir::by_path(&dir, Missing::Refuse).unwrap();
        assert!(handle.open_file("link").is_err());
        assert!(handle.create_file("link").is_err());
        assert_eq!(fs::read_to_string(dir.join("target")).unwrap(), "secret");
        fs::remove_dir_all(&dir).unwrap();
    }
}
