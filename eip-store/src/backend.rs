//! The file under the storage engine, with reads past its end answered as damage instead of
//! as a failure of the disk.
//!
//! A page pointer on a damaged page can lead past the end of the file. redb's own file backend
//! answers that read with an I/O error, and redb latches every I/O error: from then on each
//! operation of that handle fails with `PreviousIo`, as if the disk had failed, although
//! nothing but one page is wrong. [`File`] answers such a read with zeros for the bytes past
//! the end instead: redb then meets a page it can not make sense of, which is damage, and the
//! store reads around it like around any damaged page (`scan`). A read wholly past the end gets
//! only its first [`HEADER_BYTES`] zeroed, which is all redb looks at before it refuses the
//! page: a damaged page number can ask for a page of 128 MiB, and the lookups around damage
//! would fill one per lookup. A read within the file, and every other operation, is the file
//! backend's own, errors included.

use std::io::ErrorKind;
use std::ops::Bound;
use std::path::Path;

use redb::backends::FileBackend;
use redb::{BackendError, Builder, Database, DatabaseError, StorageBackend};

/// How much of a read wholly past the end of the file is zeroed: more than any page header.
const HEADER_BYTES: usize = 4096;

/// Opens (or creates) the database `file` on a [`File`] backend.
pub(crate) fn open(builder: &Builder, file: &Path) -> Result<Database, DatabaseError> {
    let handle = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(file)?;
    builder.create_with_backend(File(FileBackend::new(handle)?))
}

/// Creates the database `file`, which must not exist yet, on a [`File`] backend.
pub(crate) fn create_new(builder: &Builder, file: &Path) -> Result<Database, DatabaseError> {
    let handle = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(file)?;
    builder.create_with_backend(File(FileBackend::new(handle)?))
}

/// redb's file backend, but a read past the end of the file gives zeros.
#[derive(Debug)]
pub(crate) struct File(FileBackend);

impl StorageBackend for File {
    fn len(&self) -> Result<u64, std::io::Error> {
        self.0.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), std::io::Error> {
        match self.0.read(offset, out) {
            Err(error) if error.kind() == ErrorKind::UnexpectedEof => {
                let len = self.0.len()?;
                if offset >= len {
                    // Wholly outside the file: a zeroed header is enough for redb to refuse the
                    // page, and a damaged length can ask for a huge page that is not worth filling
                    let header = out.len().min(HEADER_BYTES);
                    out[..header].fill(0);
                    return Ok(());
                }
                let within = usize::try_from(len - offset)
                    .unwrap_or(usize::MAX)
                    .min(out.len());
                let (inside, past) = out.split_at_mut(within);
                self.0.read(offset, inside)?;
                past.fill(0);
                Ok(())
            }
            other => other,
        }
    }

    fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
        self.0.set_len(len)
    }

    fn sync_data(&self) -> Result<(), std::io::Error> {
        self.0.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
        self.0.write(offset, data)
    }

    fn close(&self) -> Result<(), std::io::Error> {
        self.0.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.0.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.0.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.0.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.0.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.0.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.0.query_lock_range(start, end)
    }
}
