//! Review (issue 11, rename.rs `format_literal`): in a method whose body names `self`, every
//! string literal inside any macro call that contains `{self}` or `{self:` is rewritten to
//! `{__self}`, including literals that are not format strings (`vec!`, a format argument, a
//! template). The program's data changes silently.
#![allow(missing_docs)]
use reattempt::retryable;

#[derive(Debug, PartialEq)]
pub struct Fail;

pub struct Templates {
    name: &'static str,
}

impl Templates {
    #[retryable(max_attempts = 2, delay = "1ms")]
    fn list(&self) -> Result<Vec<&'static str>, Fail> {
        Ok(vec![self.name, "Hello {self}", "{self:?}"])
    }

    #[retryable(max_attempts = 2, delay = "1ms")]
    fn argument(&self) -> Result<String, Fail> {
        Ok(format!("{} {}", self.name, "{self}"))
    }
}

#[test]
fn string_literals_that_are_not_format_strings_are_kept() {
    let t = Templates { name: "t" };
    assert_eq!(t.list(), Ok(vec!["t", "Hello {self}", "{self:?}"]));
    assert_eq!(t.argument(), Ok("t {self}".to_owned()));
}
