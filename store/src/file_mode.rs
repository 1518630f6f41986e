//! Who may read the SQLite database. It holds reporters' contacts, dossiers and password
//! hashes, so the folder the desk creates for it is 0700 and the database, its `-wal` and its
//! `-shm` are 0600 whatever the umask — also for a database created before this rule, when
//! this process owns it.
//!
//! SQLite gives the `-wal` and `-shm` files it creates the database file's mode, so creating
//! the database 0600 before SQLite opens it covers the files it makes later; the companions
//! left by an earlier run are tightened after the first connection.

use std::path::Path;

/// Creates `folder` (and any missing parent) as 0700. A folder that exists is left as it is:
/// it may be shared on purpose (the working directory, `/var/lib`).
pub(crate) fn create_private_folder(folder: &Path) -> std::io::Result<()> {
    if folder.exists() {
        return Ok(());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(folder)?;
        // The umask could only have removed bits; say exactly what is meant.
        std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o700))
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(folder)
    }
}

/// Creates the database file as 0600 when it is missing, or takes group and other access away
/// from one that exists.
pub(crate) fn prepare_database_file(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
        {
            Ok(_) => std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                tighten(path);
                Ok(())
            }
            Err(error) => Err(error),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(())
    }
}

/// Tightens the `-wal` and `-shm` beside `database` (those of an earlier run keep their mode).
pub(crate) fn tighten_companions(database: &Path) {
    for suffix in ["-wal", "-shm"] {
        let mut name = database.as_os_str().to_owned();
        name.push(suffix);
        let companion = std::path::PathBuf::from(name);
        if companion.exists() {
            tighten(&companion);
        }
    }
}

/// Removes group and other bits. A file owned by someone else cannot be changed (the owner
/// chose its mode); that is said in the log, and the desk goes on.
fn tighten(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let result = std::fs::metadata(path).and_then(|meta| {
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 == 0 {
                return Ok(());
            }
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o700))
        });
        if let Err(error) = result {
            tracing::warn!(path = %path.display(), %error, "cannot make the database file private (0600)");
        }
    }
    #[cfg(not(unix))]
    {
        let _ = path;
    }
}
