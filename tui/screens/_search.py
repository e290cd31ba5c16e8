"""The search screen (`s`): results update as you type; Enter opens the hit's turn."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import msgspec
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Checkbox, Input, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import Worker, get_current_worker
from turnline.core.catalog import Catalog, CatalogError
from turnline.core.query import DEFAULT_FIELDS, FIELDS
from turnline.core.search import Hit, QueryError, parse_query, search
from turnline.core.textsafe import one_line

from ..widgets._footer import KeyFooter

#: Seconds of no typing before a query runs.
DEBOUNCE = 0.25
LIMIT = 200
HINT = "type to search user and assistant text"
#: The key that toggles each field's checkbox (F-keys: the query box takes letters).
FIELD_KEYS: dict[str, str] = {"user": "f2", "assistant": "f3", "reasoning": "f4", "tool": "f5"}
INHERITED_KEY = "f6"


def hint(fields: tuple[str, ...]) -> str:
    """What the status line says before a query: which fields are searched."""
    if not fields:
        return "choose a field to search (F2–F5)"
    words = list(fields)
    shown = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
    return f"type to search {shown} text"


#: Held while a search brings the catalog up to date (see `SearchScreen._run`).
_REFRESHING = threading.Lock()


def hit_prompt(hit: Hit) -> Text:
    """One result row: title, short id, turn, field, then the snippet with matches in
    reverse video. Built from `Text` pieces, so log text is never read as markup."""
    head = Text()
    head.append(one_line(hit.title or hit.session, 50), style="bold")
    head.append(f"  {one_line(hit.session)[:8]}  turn {hit.turn}  {hit.field}", style="dim")
    if hit.inherited_from:
        head.append(f"  from {one_line(hit.inherited_from)[:8]}", style="dim")
    elif hit.inherited_by:
        head.append(f"  +{hit.inherited_by} forks", style="dim")
    body = Text("\n  ")
    pos = 0
    for start, end in hit.marks:
        body.append(hit.snippet[pos:start])
        body.append(hit.snippet[start:end], style="reverse bold")
        pos = end
    body.append(hit.snippet[pos:])
    return head + body


class SearchChoice(msgspec.Struct, frozen=True):
    """The hit Enter chose, and the query that found it (the detail pane highlights it).

    Attributes:
        hit: The chosen hit.
        query: The QUERY as typed.
    """

    hit: Hit
    query: str

    @property
    def path(self) -> str:
        """The hit's log."""
        return self.hit.path

    @property
    def seq(self) -> int:
        """Seq of the hit's first matching event."""
        return self.hit.seq


class SearchScreen(ModalScreen[SearchChoice | None]):
    """Find text in every session of the root, credited to the session that said it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss_none", "Close"),
        Binding("down", "focus_results", "Results", show=False),
        # Priority: they act while the query box has the focus.
        *(
            Binding(key, f"toggle_field('{name}')", name, priority=True)
            for name, key in FIELD_KEYS.items()
        ),
        Binding(INHERITED_KEY, "toggle_inherited", "inherited", priority=True),
    ]
    DEFAULT_CSS = """
    SearchScreen { align: center middle; }
    SearchScreen > Vertical {
        width: 90%; height: 85%; border: round $accent; background: $surface;
    }
    SearchScreen #search-status { height: 1; color: $text-muted; padding: 0 1; }
    SearchScreen #search-options { height: auto; padding: 0 1; }
    SearchScreen #search-fields { height: 1; width: auto; }
    SearchScreen Checkbox { border: none; height: 1; padding: 0 1 0 0; }
    SearchScreen Checkbox:focus { text-style: bold reverse; }
    SearchScreen OptionList { height: 1fr; }
    """

    def __init__(self, root: Path, *, catalog_path: str | None = None) -> None:
        super().__init__()
        self.root = root
        self.catalog_path = catalog_path
        self.hits: list[Hit] = []
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Input(placeholder='search: words, "a phrase", prefix*', id="search-input")
            yield from self._options()
            yield Static(Text(HINT), id="search-status")
            yield OptionList(id="search-results")
        yield KeyFooter()  # the dialog's own keys, over the main screen's

    def _options(self) -> ComposeResult:
        """The field checkboxes (F2–F5) and the inherited-copies toggle (F6)."""
        with Vertical(id="search-options"):
            with Horizontal(id="search-fields"):
                for name in FIELDS:
                    yield Checkbox(
                        f"{FIELD_KEYS[name].upper()} {name}",
                        name in DEFAULT_FIELDS,
                        id=f"field-{name}",
                        compact=True,
                    )
            yield Checkbox(
                f"{INHERITED_KEY.upper()} include inherited copies",
                False,
                id="search-inherited",
                compact=True,
            )

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields checked, in the core's order."""
        return tuple(name for name in FIELDS if self.query_one(f"#field-{name}", Checkbox).value)

    @property
    def include_inherited(self) -> bool:
        """List each fork's inherited copy of a hit too."""
        return self.query_one("#search-inherited", Checkbox).value

    def action_toggle_field(self, name: str) -> None:
        """Search `name` (user, assistant, reasoning, tool) or stop searching it."""
        self.query_one(f"#field-{name}", Checkbox).toggle()

    def action_toggle_inherited(self) -> None:
        """List inherited copies of each hit, or not."""
        self.query_one("#search-inherited", Checkbox).toggle()

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        event.stop()
        query = self.query_one("#search-input", Input).value
        if query.strip():
            self._run(query)
        else:
            self._status(hint(self.fields))

    def on_mount(self) -> None:
        self.query_one(Vertical).border_title = "Search"
        self.query_one(Input).focus()
        self._prepare()

    @work(thread=True, exclusive=True, group="catalog")
    def _prepare(self) -> None:
        """Bring the catalog up to date as soon as the screen opens, while the user
        types (the first search of a root builds it, showing how far it got)."""
        worker = get_current_worker()
        try:
            catalog = Catalog(self.root, self.catalog_path)
        except CatalogError as exc:
            self.app.call_from_thread(self._status, str(exc))
            return
        try:
            with _REFRESHING:
                if not worker.is_cancelled:
                    catalog.refresh(self._progress_for(worker))
        finally:
            catalog.close()
        if not worker.is_cancelled:
            self.app.call_from_thread(self._ready)

    def _ready(self) -> None:
        if not self.query_one(Input).value.strip():
            self._status(hint(self.fields))

    def _progress_for(self, worker: Worker[None]) -> Callable[[int, int], None]:
        def progress(done: int, total: int) -> None:
            if not worker.is_cancelled and total:
                self.app.call_from_thread(
                    self._status,
                    f"building the search catalog: {done:,}/{total:,} logs "
                    f"({100 * done // total}%)",
                )

        return progress

    def on_input_changed(self, event: Input.Changed) -> None:
        if self._timer is not None:
            self._timer.stop()
        query = event.value
        self._timer = self.set_timer(DEBOUNCE, lambda: self._run(query))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if self.hits:
            self._choose(self.hits[0])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        index = event.option_index
        if 0 <= index < len(self.hits):
            self._choose(self.hits[index])

    def _choose(self, hit: Hit) -> None:
        self.dismiss(SearchChoice(hit, self.query_one("#search-input", Input).value))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)

    def action_focus_results(self) -> None:
        self.query_one(OptionList).focus()

    def _status(self, text: str) -> None:
        self.query_one("#search-status", Static).update(Text(text))

    def _show(
        self,
        query: str,
        hits: list[Hit],
        total: int,
        options: tuple[tuple[str, ...], bool] | None = None,
        unsearched: int = 0,
    ) -> None:
        if self.query_one(Input).value != query:
            return  # typed on meanwhile
        if options is not None and options != (self.fields, self.include_inherited):
            return  # a checkbox changed meanwhile
        self.hits = hits
        results = self.query_one(OptionList)
        results.clear_options()
        results.add_options([Option(hit_prompt(h)) for h in hits])
        more = f" (showing {len(hits)})" if total > len(hits) else ""
        if unsearched:  # (the catalog cannot hold their paths: `Catalog.unstorable`)
            logs = f"{unsearched} log{'s' if unsearched != 1 else ''}"
            more += f" · {logs} not searched: path or id not UTF-8"
        self._status(f"{total} hit{'s' if total != 1 else ''}{more}")

    def _run(self, query: str) -> None:
        """Search `query` in the checked fields (a worker does the reading)."""
        fields = self.fields
        if query.strip() and not fields:
            self.hits = []
            self.query_one(OptionList).clear_options()
            self._status(hint(fields))
            return
        self._search(query, fields, self.include_inherited)

    @work(thread=True, exclusive=True, group="search")
    def _search(self, query: str, fields: tuple[str, ...], include_inherited: bool) -> None:
        if not query.strip():
            self.app.call_from_thread(self._show, query, [], 0)
            return
        worker = get_current_worker()
        progress = self._progress_for(worker)
        try:
            parse_query(query)  # a malformed query is said at once, before any indexing
            catalog = Catalog(self.root, self.catalog_path)
        except (CatalogError, QueryError) as exc:
            self.app.call_from_thread(self._status, str(exc))
            return
        try:
            # One refresh at a time: a query typed while the first one still builds
            # the catalog waits for it (then finds it current) instead of indexing
            # every log a second time.
            with _REFRESHING:
                if worker.is_cancelled:
                    return
                catalog.refresh(progress)
            result = search(
                catalog,
                query,
                fields=fields,
                include_inherited=include_inherited,
                limit=LIMIT,
                refresh=False,
            )
            unsearched = len(catalog.unstorable)
        except QueryError as exc:
            self.app.call_from_thread(self._status, str(exc))
            return
        finally:
            catalog.close()
        if not worker.is_cancelled:
            self.app.call_from_thread(
                self._show,
                query,
                result.hits,
                result.total,
                (fields, include_inherited),
                unsearched,
            )
