//! Type erasure for the pages' views, without the code nobody calls.
//!
//! `into_any()` keeps, for every view type it erases, both ways of hydrating it: the
//! synchronous one and an asynchronous one (a future per view type, most of a page's hydration
//! code a second time). Inside a route only the synchronous one ever runs — `<Routes>` waits
//! for the lazy route's code, then hydrates the matched view with `hydrate` — so the
//! asynchronous copies were a quarter of the owners' desk's WebAssembly and a third of the
//! tracking page's, never executed. [`IntoAnySync::into_any_sync`] erases a view whose
//! asynchronous hydration is the synchronous one. Use it for views inside a page; the frame
//! around the routes (`App`, `Frame`) keeps `into_any`, since it does wait for a lazy route.

use leptos::prelude::*;
use leptos::tachys::html::attribute::any_attribute::AnyAttribute;
use leptos::tachys::html::attribute::Attribute;
use leptos::tachys::hydration::Cursor;
use leptos::tachys::ssr::StreamBuilder;
use leptos::tachys::view::add_attr::AddAnyAttr;
use leptos::tachys::view::{Position, PositionState, Render, RenderHtml};

/// A view that hydrates only synchronously (its `hydrate_async` is the trait's default, which
/// calls `hydrate`); everything else is the inner view's own.
#[derive(Debug)]
pub(crate) struct SyncHydrate<V>(V);

impl<V: Render> Render for SyncHydrate<V> {
    type State = V::State;

    fn build(self) -> Self::State {
        self.0.build()
    }

    fn rebuild(self, state: &mut Self::State) {
        self.0.rebuild(state);
    }
}

impl<V: AddAnyAttr> AddAnyAttr for SyncHydrate<V> {
    type Output<SomeNewAttr: Attribute> = SyncHydrate<V::Output<SomeNewAttr>>;

    fn add_any_attr<NewAttr: Attribute>(self, attr: NewAttr) -> Self::Output<NewAttr>
    where
        Self::Output<NewAttr>: RenderHtml,
    {
        SyncHydrate(self.0.add_any_attr(attr))
    }
}

impl<V: RenderHtml> RenderHtml for SyncHydrate<V> {
    type AsyncOutput = V::AsyncOutput;
    type Owned = SyncHydrate<V::Owned>;

    const MIN_LENGTH: usize = V::MIN_LENGTH;
    const EXISTS: bool = V::EXISTS;

    fn dry_resolve(&mut self) {
        self.0.dry_resolve();
    }

    fn resolve(self) -> impl std::future::Future<Output = Self::AsyncOutput> + Send {
        self.0.resolve()
    }

    fn html_len(&self) -> usize {
        self.0.html_len()
    }

    fn to_html_with_buf(
        self,
        buf: &mut String,
        position: &mut Position,
        escape: bool,
        mark_branches: bool,
        extra_attrs: Vec<AnyAttribute>,
    ) {
        self.0
            .to_html_with_buf(buf, position, escape, mark_branches, extra_attrs);
    }

    fn to_html_async_with_buf<const OUT_OF_ORDER: bool>(
        self,
        buf: &mut StreamBuilder,
        position: &mut Position,
        escape: bool,
        mark_branches: bool,
        extra_attrs: Vec<AnyAttribute>,
    ) where
        Self: Sized,
    {
        self.0.to_html_async_with_buf::<OUT_OF_ORDER>(
            buf,
            position,
            escape,
            mark_branches,
            extra_attrs,
        );
    }

    fn hydrate<const FROM_SERVER: bool>(
        self,
        cursor: &Cursor,
        position: &PositionState,
    ) -> Self::State {
        self.0.hydrate::<FROM_SERVER>(cursor, position)
    }

    fn into_owned(self) -> Self::Owned {
        SyncHydrate(self.0.into_owned())
    }
}

/// [`IntoAny`] for views inside a page: see the module's documentation.
pub(crate) trait IntoAnySync {
    /// Erases the view's type; it hydrates synchronously only.
    fn into_any_sync(self) -> AnyView;
}

impl<V: RenderHtml + Send + 'static> IntoAnySync for V {
    fn into_any_sync(self) -> AnyView {
        SyncHydrate(self).into_any()
    }
}
