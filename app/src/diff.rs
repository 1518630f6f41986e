//! A unified diff (`git diff` output) read into files, hunks and numbered lines, for the bug
//! view's diff viewer. Pure: the same on the server and in the browser, tested here.

/// What one line of a hunk is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    /// Unchanged, shown for context.
    Context,
    /// Added by the change.
    Added,
    /// Removed by the change.
    Removed,
    /// `\ No newline at end of file`, about the line before.
    Note,
}

/// One line of a hunk with its numbers in the old and the new file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffLine {
    /// What it is.
    pub kind: LineKind,
    /// Its number in the old file (removed and context lines).
    pub old: Option<u32>,
    /// Its number in the new file (added and context lines).
    pub new: Option<u32>,
    /// The text, without the leading marker.
    pub text: String,
}

/// One `@@ … @@` part of a file's change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hunk {
    /// The header as git wrote it (`@@ -3,7 +3,8 @@ fn total`).
    pub header: String,
    /// Its lines.
    pub lines: Vec<DiffLine>,
}

/// One file of the change.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiffFile {
    /// The path before (`/dev/null` for a new file).
    pub old_path: String,
    /// The path after (`/dev/null` for a deleted file).
    pub new_path: String,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// A binary file (no lines to show).
    pub binary: bool,
    /// Its hunks.
    pub hunks: Vec<Hunk>,
}

impl DiffFile {
    /// The path to show: the new one, or the old one for a deleted file.
    pub fn path(&self) -> &str {
        if self.new_path == "/dev/null" || self.new_path.is_empty() {
            &self.old_path
        } else {
            &self.new_path
        }
    }

    /// `new file`, `deleted`, `renamed from …`, or nothing.
    pub fn status(&self) -> Option<String> {
        if self.old_path == "/dev/null" {
            Some("new file".to_owned())
        } else if self.new_path == "/dev/null" {
            Some("deleted".to_owned())
        } else if self.old_path != self.new_path && !self.old_path.is_empty() {
            Some(format!("renamed from {}", self.old_path))
        } else {
            None
        }
    }
}

/// `a/path` or `b/path` without its prefix; `/dev/null` stays.
fn strip_prefix(path: &str) -> String {
    let path = path.trim_end_matches('\t').trim();
    path.strip_prefix("a/")
        .or_else(|| path.strip_prefix("b/"))
        .unwrap_or(path)
        .to_owned()
}

/// The starts of `@@ -a,b +c,d @@`: (a, c).
fn hunk_starts(header: &str) -> Option<(u32, u32)> {
    let inner = header.strip_prefix("@@ ")?;
    let end = inner.find(" @@")?;
    let mut parts = inner[..end].split(' ');
    let old = parts.next()?.strip_prefix('-')?;
    let new = parts.next()?.strip_prefix('+')?;
    let start = |range: &str| range.split(',').next()?.parse::<u32>().ok();
    Some((start(old)?, start(new)?))
}

/// Reads a unified diff. Anything it does not understand is skipped, never guessed: a
/// malformed hunk header ends that file's hunks.
pub fn parse(diff: &str) -> Vec<DiffFile> {
    let mut files: Vec<DiffFile> = Vec::new();
    let mut numbers: Option<(u32, u32)> = None;
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let (old, new) = rest.split_once(" b/").map_or_else(
                || (rest.to_owned(), rest.to_owned()),
                |(a, b)| (strip_prefix(a), b.to_owned()),
            );
            files.push(DiffFile {
                old_path: old,
                new_path: new,
                ..DiffFile::default()
            });
            numbers = None;
            continue;
        }
        let Some(file) = files.last_mut() else {
            continue;
        };
        if numbers.is_none() || line.starts_with("@@ ") {
            if let Some(path) = line.strip_prefix("--- ") {
                file.old_path = strip_prefix(path);
            } else if let Some(path) = line.strip_prefix("+++ ") {
                file.new_path = strip_prefix(path);
            } else if line.starts_with("Binary files ") {
                file.binary = true;
            } else if let Some(path) = line.strip_prefix("rename from ") {
                file.old_path = path.to_owned();
            } else if let Some(path) = line.strip_prefix("rename to ") {
                file.new_path = path.to_owned();
            } else if line.starts_with("new file mode") {
                file.old_path = "/dev/null".to_owned();
            } else if line.starts_with("deleted file mode") {
                file.new_path = "/dev/null".to_owned();
            } else if line.starts_with("@@ ") {
                numbers = hunk_starts(line);
                if numbers.is_some() {
                    file.hunks.push(Hunk {
                        header: line.to_owned(),
                        lines: Vec::new(),
                    });
                }
            }
            continue;
        }
        let (Some((old, new)), Some(hunk)) = (numbers.as_mut(), file.hunks.last_mut()) else {
            continue;
        };
        let (kind, text) = match line.chars().next() {
            Some('+') => (LineKind::Added, &line[1..]),
            Some('-') => (LineKind::Removed, &line[1..]),
            Some(' ') => (LineKind::Context, &line[1..]),
            Some('\\') => (LineKind::Note, line.trim_start_matches('\\').trim()),
            // An empty context line some tools write without its space.
            None => (LineKind::Context, ""),
            Some(_) => continue,
        };
        let (old_no, new_no) = match kind {
            LineKind::Added => {
                *new += 1;
                file.added += 1;
                (None, Some(*new - 1))
            }
            LineKind::Removed => {
                *old += 1;
                file.removed += 1;
                (Some(*old - 1), None)
            }
            LineKind::Context => {
                *old += 1;
                *new += 1;
                (Some(*old - 1), Some(*new - 1))
            }
            LineKind::Note => (None, None),
        };
        hunk.lines.push(DiffLine {
            kind,
            old: old_no,
            new: new_no,
            text: text.to_owned(),
        });
    }
    files
}

/// A hunk side by side: each row the old line (left) and the new one (right); a run of
/// removed lines is paired with the run of added lines after it.
pub fn side_by_side(hunk: &Hunk) -> Vec<(Option<&DiffLine>, Option<&DiffLine>)> {
    let mut rows = Vec::new();
    let lines = &hunk.lines;
    let mut i = 0;
    while i < lines.len() {
        match lines[i].kind {
            LineKind::Context | LineKind::Note => {
                rows.push((Some(&lines[i]), Some(&lines[i])));
                i += 1;
            }
            LineKind::Added => {
                rows.push((None, Some(&lines[i])));
                i += 1;
            }
            LineKind::Removed => {
                let removed_end = lines[i..]
                    .iter()
                    .position(|l| l.kind != LineKind::Removed)
                    .map_or(lines.len(), |p| i + p);
                let added_end = lines[removed_end..]
                    .iter()
                    .position(|l| l.kind != LineKind::Added)
                    .map_or(lines.len(), |p| removed_end + p);
                let (removed, added) = (&lines[i..removed_end], &lines[removed_end..added_end]);
                for k in 0..removed.len().max(added.len()) {
                    rows.push((removed.get(k), added.get(k)));
                }
                i = added_end;
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHANGE: &str = "diff --git a/src/cart.rs b/src/cart.rs
index 1111111..2222222 100644
--- a/src/cart.rs
+++ b/src/cart.rs
@@ -10,6 +10,7 @@ impl Cart {
     pub fn total(&self) -> Rupees {
-        let total = self.subtotal() - self.discount();
-        total
+        let discount = self.discount().min(self.subtotal());
+        let total = self.subtotal() - discount;
+        total.max(Rupees(0.0))
     }
 
 }
diff --git a/tests/coupon.rs b/tests/coupon.rs
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/tests/coupon.rs
@@ -0,0 +1,2 @@
+#[test]
+fn save300_on_a_small_cart() {}
\\ No newline at end of file
diff --git a/logo.png b/logo.png
index 4444444..5555555 100644
Binary files a/logo.png and b/logo.png differ
";

    #[test]
    fn files_hunks_and_line_numbers_are_read_as_git_wrote_them() {
        let files = parse(CHANGE);
        assert_eq!(files.len(), 3);
        let cart = &files[0];
        assert_eq!((cart.path(), cart.status()), ("src/cart.rs", None));
        assert_eq!((cart.added, cart.removed), (3, 2));
        let lines = &cart.hunks[0].lines;
        assert_eq!(cart.hunks[0].header, "@@ -10,6 +10,7 @@ impl Cart {");
        assert_eq!(
            (lines[0].kind, lines[0].old, lines[0].new),
            (LineKind::Context, Some(10), Some(10))
        );
        assert_eq!(
            (lines[1].kind, lines[1].old, lines[1].new),
            (LineKind::Removed, Some(11), None)
        );
        assert_eq!((lines[2].kind, lines[2].old), (LineKind::Removed, Some(12)));
        assert_eq!((lines[3].kind, lines[3].new), (LineKind::Added, Some(11)));
        assert_eq!((lines[5].kind, lines[5].new), (LineKind::Added, Some(13)));
        assert_eq!((lines[6].old, lines[6].new), (Some(13), Some(14)));
        assert_eq!(
            lines[3].text,
            "        let discount = self.discount().min(self.subtotal());"
        );
        // An empty context line without its space still counts.
        assert_eq!((lines[7].old, lines[7].new), (Some(14), Some(15)));

        let test = &files[1];
        assert_eq!(
            (test.path(), test.status()),
            ("tests/coupon.rs", Some("new file".to_owned()))
        );
        assert_eq!((test.added, test.removed), (2, 0));
        assert_eq!(test.hunks[0].lines[2].kind, LineKind::Note);
        assert!(files[2].binary && files[2].hunks.is_empty());
    }

    #[test]
    fn side_by_side_pairs_removed_with_added_lines() {
        let files = parse(CHANGE);
        let rows = side_by_side(&files[0].hunks[0]);
        // context, 2 removed paired with 3 added (one left empty), context ×3
        assert_eq!(rows.len(), 1 + 3 + 3);
        assert_eq!(rows[1].0.unwrap().old, Some(11));
        assert_eq!(rows[1].1.unwrap().new, Some(11));
        assert!(rows[3].0.is_none() && rows[3].1.unwrap().new == Some(13));
    }

    #[test]
    fn deleted_renamed_and_malformed_changes_are_read_without_guessing() {
        let deleted = parse(
            "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n",
        );
        assert_eq!(
            (deleted[0].path(), deleted[0].status()),
            ("old.txt", Some("deleted".to_owned()))
        );
        assert_eq!(deleted[0].hunks[0].lines[0].old, Some(1));
        let renamed = parse(
            "diff --git a/a.rs b/b.rs\nsimilarity index 100%\nrename from a.rs\nrename to b.rs\n",
        );
        assert_eq!(renamed[0].status(), Some("renamed from a.rs".to_owned()));
        let malformed = parse("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ nonsense @@\n+ignored\n");
        assert!(malformed[0].hunks.is_empty() && malformed[0].added == 0);
        assert!(parse("").is_empty() && parse("+not a diff\n").is_empty());
    }
}
