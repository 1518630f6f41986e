//! Where a proposed reproduction may live: the project's test-path patterns (globs over
//! `/`-separated relative paths: `*` and `?` stay inside one part, `**` spans any number of
//! parts), by default the places the project's test runner looks, and never a folder a fix
//! may change (the fixer could otherwise make the bug's own test pass by editing it).

/// Most patterns one project may name.
pub const MAX_PATTERNS: usize = 20;

/// The patterns a profile's runner collects from when the project names none.
pub fn defaults(profile: &str) -> &'static [&'static str] {
    match profile {
        // Integration tests: `tests/` of the package, or of a member of a workspace.
        "rust" => &["tests/**/*.rs", "**/tests/**/*.rs"],
        "node" | "node_test" => &[
            "**/*.test.js",
            "**/*.test.mjs",
            "**/*.test.cjs",
            "**/*-test.js",
            "**/*_test.js",
            "**/test-*.js",
            "**/test.js",
            "**/test/**/*.js",
            "**/test/**/*.mjs",
            "**/test/**/*.cjs",
        ],
        "vitest" => &[
            "**/*.test.ts",
            "**/*.test.tsx",
            "**/*.test.mts",
            "**/*.test.js",
            "**/*.test.jsx",
            "**/*.test.mjs",
            "**/*.spec.ts",
            "**/*.spec.tsx",
            "**/*.spec.mts",
            "**/*.spec.js",
            "**/*.spec.jsx",
            "**/*.spec.mjs",
        ],
        "python" => &["**/test_*.py", "**/*_test.py"],
        "go" => &["**/*_test.go"],
        // The project's own script decides what runs: any file outside the fix paths.
        _ => &["**"],
    }
}

/// Whether `pattern` is one the desk accepts: relative, no `.`/`..` or empty parts, no
/// hidden parts, at most 200 characters of letters, digits and `_ - . / * ?`.
pub fn valid_pattern(pattern: &str) -> bool {
    !pattern.is_empty()
        && pattern.len() <= 200
        && !pattern.starts_with('/')
        && pattern
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != ".." && !part.starts_with('.'))
        && pattern
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '*' | '?'))
}

/// The longest proposed test path the desk looks at, and its most parts.
pub const MAX_PATH_BYTES: usize = 400;
/// See [`MAX_PATH_BYTES`].
pub const MAX_PATH_PARTS: usize = 24;

/// Whether `path` (relative, `/`-separated) matches `pattern`. Polynomial in the lengths,
/// whatever the pattern (no backtracking blow-up): parts are matched by dynamic programming
/// over (pattern part, path part), and each part by the linear-space wildcard algorithm.
pub fn matches(pattern: &str, path: &str) -> bool {
    let pattern: Vec<&str> = pattern.split('/').collect();
    let path: Vec<&str> = path.split('/').collect();
    // reach[j]: the first i pattern parts can match the first j path parts.
    let mut reach = vec![false; path.len() + 1];
    reach[0] = true;
    for part in &pattern {
        let mut next = vec![false; path.len() + 1];
        if *part == "**" {
            // Zero or more whole parts: anything reachable before stays, and extends.
            let mut any = false;
            for j in 0..=path.len() {
                any |= reach[j];
                next[j] = any;
            }
        } else {
            for j in 1..=path.len() {
                next[j] = reach[j - 1] && part_matches(part.as_bytes(), path[j - 1].as_bytes());
            }
        }
        reach = next;
    }
    reach[path.len()]
}

/// One part: `*` any run of characters, `?` one; the classic greedy algorithm that
/// remembers only the last `*`, O(pattern × text) at worst.
fn part_matches(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == b'?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((star_p, star_t)) = star {
            p = star_p + 1;
            t = star_t + 1;
            star = Some((star_p, star_t + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Whether `path` lies inside the folder `prefix` (`src/` or `src`), compared by whole
/// components: `srcs/x` is not inside `src/`; `./src/x` and `src` itself are.
pub fn in_folder(path: &str, prefix: &str) -> bool {
    let parts = |text: &str| -> Vec<String> {
        text.trim()
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .map(str::to_owned)
            .collect()
    };
    let (path, folder) = (parts(path), parts(prefix));
    !folder.is_empty() && path.len() >= folder.len() && path[..folder.len()] == folder[..]
}

/// Checks a proposed test path: it must match one of `patterns` (the profile's
/// [`defaults`] when empty) and lie in none of `fix_paths`. The error says why in words
/// meant for the crew's model.
pub fn check(
    path: &str,
    patterns: &[String],
    profile: &str,
    fix_paths: &[String],
) -> Result<(), String> {
    if let Some(fix_path) = fix_paths.iter().find(|prefix| in_folder(path, prefix)) {
        return Err(format!(
            "{path} is under {fix_path}, where a fix may write: a reproduction lives outside the fix's paths so that no fix can change it"
        ));
    }
    let normalized = path.trim().trim_start_matches("./");
    if normalized.len() > MAX_PATH_BYTES || normalized.split('/').count() > MAX_PATH_PARTS {
        return Err(format!(
            "a test path has at most {MAX_PATH_BYTES} bytes in at most {MAX_PATH_PARTS} parts"
        ));
    }
    if normalized
        .split('/')
        .any(|part| part.is_empty() || part.starts_with('.'))
    {
        return Err(format!(
            "{path} has an empty, hidden or relative part (`.git`, `..`, `//`): a test lives in a plain folder of the project"
        ));
    }
    let owned: Vec<&str>;
    let patterns: &[&str] = if patterns.is_empty() {
        defaults(profile)
    } else {
        owned = patterns.iter().map(String::as_str).collect();
        &owned
    };
    if patterns.iter().any(|p| matches(p, normalized)) {
        Ok(())
    } else {
        Err(format!(
            "{path} matches none of the project's test paths ({}): write the test where the project keeps its tests",
            patterns.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_keep_star_inside_a_part_and_let_double_star_span_parts() {
        assert!(matches("tests/**/*.rs", "tests/coupon.rs"));
        assert!(matches("tests/**/*.rs", "tests/cart/coupon.rs"));
        assert!(!matches("tests/**/*.rs", "src/coupon.rs"));
        assert!(!matches("tests/*.rs", "tests/cart/coupon.rs"));
        assert!(matches("**/*_test.go", "cart_test.go"));
        assert!(matches("**/*_test.go", "pkg/cart/cart_test.go"));
        assert!(!matches("**/*_test.go", "pkg/cart/cart.go"));
        assert!(matches("**/test_?.py", "a/test_x.py"));
        assert!(!matches("**/test_?.py", "a/test_xy.py"));
        assert!(matches("**", "anything/at/all"));
        assert!(!matches("*.rs", "src/a.rs"));
    }

    #[test]
    fn matching_stays_fast_on_patterns_built_to_backtrack() {
        let evil = "*a*a*a*a*a*a*a*a*a*a*b";
        let started = std::time::Instant::now();
        assert!(!matches(evil, &"a".repeat(MAX_PATH_BYTES)));
        let parts = format!("{}{}b", "**/".repeat(40), "*a".repeat(20));
        let path = vec!["a".repeat(15); MAX_PATH_PARTS].join("/");
        assert!(!matches(&parts, &path));
        assert!(matches("**/**/*a*", "x/y/za"));
        // Generous: the naive matcher took seconds to hours here.
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn a_proposed_path_has_no_hidden_or_empty_parts_and_a_bounded_length() {
        let none: &[String] = &[];
        for bad in [
            "tests/.git/x.rs",
            ".github/test_x.py",
            "tests//x.rs",
            "tests/../x.rs",
        ] {
            assert!(check(bad, none, "python", &[]).is_err(), "{bad}");
        }
        let long = format!("tests/{}.rs", "a".repeat(MAX_PATH_BYTES));
        assert!(check(&long, none, "rust", &[])
            .unwrap_err()
            .contains("at most"));
        let deep = format!("tests/{}x.rs", "a/".repeat(MAX_PATH_PARTS));
        assert!(check(&deep, none, "rust", &[]).is_err());
    }

    #[test]
    fn each_profile_accepts_its_runners_files_and_refuses_the_rest() {
        let none: &[String] = &[];
        let fix = ["src/".to_owned()];
        assert!(check("tests/coupon.rs", none, "rust", &fix).is_ok());
        assert!(check("./tests/coupon.rs", none, "rust", &fix).is_ok());
        assert!(check("crates/cart/tests/coupon.rs", none, "rust", &fix).is_ok());
        assert!(check("build.rs", none, "rust", &fix).is_err());
        assert!(check("Cargo.toml", none, "rust", &fix).is_err());
        assert!(check("pkg/cart_test.go", none, "go", &fix).is_ok());
        assert!(check("pkg/cart.go", none, "go", &fix).is_err());
        assert!(check("tests/test_cart.py", none, "python", &fix).is_ok());
        assert!(check("conftest.py", none, "python", &fix).is_err());
        assert!(check("setup.py", none, "python", &fix).is_err());
        assert!(check("web/cart.spec.ts", none, "vitest", &fix).is_ok());
        assert!(check("vitest.config.ts", none, "vitest", &fix).is_err());
        assert!(check("test/cart.js", none, "node", &fix).is_ok());
        assert!(check("package.json", none, "node", &fix).is_err());
        // Never inside a fix path, whatever the pattern says.
        let error = check("src/cart_test.go", none, "go", &fix).unwrap_err();
        assert!(error.contains("where a fix may write"), "{error}");
    }

    #[test]
    fn a_projects_own_patterns_replace_the_defaults() {
        let mine = ["spec/**/*_spec.rs".to_owned()];
        let fix = ["src/".to_owned()];
        assert!(check("spec/cart/coupon_spec.rs", &mine, "rust", &fix).is_ok());
        let error = check("tests/coupon.rs", &mine, "rust", &fix).unwrap_err();
        assert!(error.contains("spec/**/*_spec.rs"), "{error}");
    }

    #[test]
    fn folders_compare_by_whole_parts() {
        assert!(in_folder("tallybook/test_split.py", "tallybook/"));
        assert!(in_folder("./src/lib_test.rs", "src"));
        assert!(in_folder("src//a.rs", "src"));
        assert!(in_folder("src", "src/"));
        assert!(!in_folder("srcs/x.rs", "src/"));
        assert!(!in_folder("tests/coupon.rs", "src/"));
        assert!(!in_folder("tests/coupon.rs", ""));
        assert!(!in_folder("tests/coupon.rs", "  /"));
        assert!(in_folder("tests/unit/a.rs", "tests/unit/"));
    }

    #[test]
    fn only_plain_relative_patterns_are_accepted() {
        for good in ["tests/**", "**/*_test.go", "spec/*.rs", "a-b_c/x?.py"] {
            assert!(valid_pattern(good), "{good}");
        }
        for bad in [
            "",
            "/etc/**",
            "../x",
            "a/../b",
            ".git/**",
            "a//b",
            "a b",
            "x\n",
            "src/{a,b}",
        ] {
            assert!(!valid_pattern(bad), "{bad:?}");
        }
    }
}
