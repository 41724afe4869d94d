"""Training data from solved boards: one sample per position along each solution, under
either fewest-clicks rule set (``dust`` or ``former``, the game config's ``rules``).

Every sample holds the position (int8 ``[W, H]``), the cluster clicked there (bool
``[W, H]``), the clicks left along the solution (its cost-to-go) and whether that label is
proven optimal. Two labellers:

- ``exact``: boards are solved exactly where a node budget allows; otherwise the best
  solution found stands. Each later position along it is solved again, a shorter tail
  replaces the old one, and a label counts as proven when it equals that position's proven
  lower bound (a tail of a shortest solution is itself shortest). About a second a board.
- ``beam``: the numba beam search of ``beam_width`` (a few milliseconds a board, within
  about a click of the optimum at width 32); labels are upper bounds, never proven.

A run is deterministic for its settings: boards come from ``(seed, index)``, searches use
node budgets and a fresh table per board. It appends each solved board to
``journal.jsonl`` and writes a shard once all of its boards are in, so a killed run
resumes losing only the boards in flight (after a power cut, those of the last second
too), and ends with the same files as an uninterrupted one. Its ``manifest.json`` names
the settings, the shards with their sha256 and, from 0.2.92, the jaxdust versions that
labelled boards of the set (``jaxdust_versions``, oldest first). Positions equal up to the
mirror image are kept once (the first in board order) where the two play alike
(``game.mirror_symmetric``: not the dust game at odd widths); elsewhere equal positions
are. The filter that finds them holds every position kept in memory, packed (18 bytes a
position on 8x6x5 boards: ~2 GB for 10^7 boards).

    python -m jaxdust.learn.datasets --out results/sets/demo --boards 200
    python -m jaxdust.learn.datasets --out results/sets/former --env Former-7x9x4-v0 --labeller beam
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import hashlib
import io
import json
import os
import shlex
import sys
import time
import zipfile
import zlib
from typing import NamedTuple

import numpy as np

from jaxdust import __version__
from jaxdust.core import configs, files, flags, game, machine
from jaxdust.core.game import CLICK_RULES, GameConfig
from jaxdust.core.processes import WorkerDied, ordered_map
from jaxdust.core.progress import progress_bar
from jaxdust.solver import bitboard, compiled
from jaxdust.solver.api import TranspositionTable, solve
from jaxdust.solver.upper_bound import beam_clicks

FORMAT_VERSION = 1
MANIFEST_EVERY = 16  # the manifest is rewritten about this many times each time its shards double
MAX_BOARDS = 10_000_000  # a month of exact labels on one core; the boards to do and the duplicate filter stay in memory
MAX_BEAM_WIDTH = 65_536
SYNC_SECONDS = 1.0  # the journal's lines reach the disk this often (a power cut loses those since)


@dataclasses.dataclass(frozen=True)
class DatasetConfig:
    game: GameConfig = GameConfig()
    boards: int = 500
    seed: int = 0
    labeller: str = "exact"  # "exact" or "beam"
    node_limit: int = 300_000  # exact: per search, about 0.1 to 0.3 s on one core for 8x6
    beam_width: int = 32  # beam: positions kept per click
    shard_size: int = 50  # boards per shard

    def __post_init__(self):
        if self.labeller not in ("exact", "beam"):
            raise configs.FieldError("labeller", f"must be 'exact' or 'beam', got {self.labeller!r}")
        configs.require_game(self.game)
        if self.game.rules not in CLICK_RULES:  # the labels are solutions of fewest clicks
            raise configs.FieldError("game", f"{self.game.size_spec}: data sets are labelled for fewest clicks: the "
                                             f"{', '.join(CLICK_RULES)} rules, not {self.game.rules!r}")
        configs.require(self, positive=("boards", "node_limit", "beam_width", "shard_size"),
                        non_negative=("seed",), wide=("node_limit", "seed", "boards", "beam_width"))  # capped below
        for field, most in (("boards", MAX_BOARDS), ("beam_width", MAX_BEAM_WIDTH)):
            if getattr(self, field) > most:  # past these, memory runs out
                raise configs.FieldError(field, f"must be at most {most:,}, got {getattr(self, field):,}")
        if self.game.num_cells > bitboard.MAX_CELLS:
            raise configs.FieldError("game", f"{self.game.size_spec}: boards of {self.game.num_cells} cells; data "
                                             f"sets are labelled by the solver's searches, which take at most "
                                             f"{bitboard.MAX_CELLS}")


class Dataset(NamedTuple):
    boards: np.ndarray  # int8 [N, W, H]
    clicked: np.ndarray  # bool [N, W, H], the cluster removed at this position
    cost_to_go: np.ndarray  # int16 [N], clicks left along the solution
    proven: np.ndarray  # bool [N], cost_to_go is the optimum
    board_id: np.ndarray  # int32 [N], index of the source board
    step: np.ndarray  # int16 [N], clicks made before this position


DATASET_DTYPES = {"boards": np.dtype(np.int8), "clicked": np.dtype(bool), "cost_to_go": np.dtype(np.int16),
                  "proven": np.dtype(bool), "board_id": np.dtype(np.int32), "step": np.dtype(np.int16)}
"""Each ``Dataset`` field's dtype, as shards are written and checked when read."""


def source_board(config: DatasetConfig, index: int) -> np.ndarray:
    """Board ``index`` of a data set: int8 ``[W, H]`` drawn from ``(seed, index)``."""
    rng = np.random.default_rng((config.seed, index))
    return rng.integers(1, config.game.colors + 1, size=(config.game.width, config.game.height)).astype(np.int8)


def canonical_key(board: np.ndarray, *, mirror: bool) -> bytes:
    """Equal for equal boards, and for a board and its mirror image when ``mirror`` (pass
    ``game.mirror_symmetric(config)``: under the dust rules at odd widths a board and its
    mirror image can have different optima)."""
    board = np.asarray(board, np.int8)
    if not mirror:
        return board.tobytes()
    return min(board.tobytes(), np.ascontiguousarray(board[::-1]).tobytes())


class PositionFilter:
    """Which positions a data set has not seen: of equal positions (up to the mirror image
    where ``game.mirror_symmetric``) the first is new, and every later one is not.

    A position is held as its cells packed to the bits its colours need (18 bytes on 8x6x5
    boards, twice that for a moment while runs merge; a Python set of ``canonical_key``
    bytes takes 115), in sorted runs each over twice as long as the next, looked up by
    bisection: exact, with no chance of a false match.
    """

    def __init__(self, game: GameConfig):
        self.width, self.height = game.width, game.height
        self.bits = int(game.colors).bit_length()
        self.mirror = game.mirror_symmetric
        self.runs: list[np.ndarray] = []  # sorted, unique keys; each run over twice as long as the next

    def __len__(self) -> int:
        return sum(len(run) for run in self.runs)

    @property
    def nbytes(self) -> int:
        return sum(run.nbytes for run in self.runs)

    def keys(self, boards: np.ndarray) -> np.ndarray:
        """One fixed-width bytes key (numpy void) a board of int8 ``[N, W, H]``; equal for
        equal boards and, where ``mirror``, for a board and its mirror image."""
        boards = np.asarray(boards, np.int8).reshape(-1, self.width, self.height)

        def packed(cells):
            cells = cells.reshape(len(cells), self.width * self.height).astype(np.uint8)
            bits = (cells[..., None] >> np.arange(self.bits, dtype=np.uint8)) & 1
            return np.packbits(bits.reshape(len(cells), self.width * self.height * self.bits), axis=1)

        keys = packed(boards)
        if self.mirror:  # the lexicographically smaller of the two images
            mirrored = packed(boards[:, ::-1])
            first_difference = (keys != mirrored).argmax(axis=1)
            rows = np.arange(len(keys))
            smaller = mirrored[rows, first_difference] < keys[rows, first_difference]
            keys = np.where(smaller[:, None], mirrored, keys)
        return np.ascontiguousarray(keys).view(f"V{keys.shape[1]}").reshape(-1)

    def new(self, boards: np.ndarray) -> np.ndarray:
        """bool ``[N]``: which of the boards int8 ``[N, W, H]`` are new, in order (a board
        repeated within them is new the first time only); they are then seen."""
        # Sorted, so that each bisection starts where the last ended (numpy's searchsorted
        # does that for sorted keys: twice as fast here), and the new run needs no sort.
        every_key = self.keys(boards)
        keys, first = np.unique(every_key, return_index=True)  # first: of each key in this batch
        unseen = np.ones(len(keys), bool)
        for run in self.runs:
            unseen &= run[np.minimum(np.searchsorted(run, keys), len(run) - 1)] != keys
        fresh = np.zeros(len(every_key), bool)
        fresh[first[unseen]] = True
        run = keys[unseen]
        # Merged while the run before is not over twice as long, so there are at most
        # log2(positions) runs to look in, however the batches' sizes go, and each key is
        # merged about as often.
        while self.runs and len(self.runs[-1]) <= 2 * len(run):
            run = np.concatenate([self.runs.pop(), run])
            run.sort(kind="stable")  # two sorted halves: timsort merges them in one pass
        if len(run):
            self.runs.append(run)
        return fresh


def _click(planes: np.ndarray, geometry: bitboard.Geometry, board: np.ndarray, x: int,
           y: int) -> tuple[np.ndarray, np.ndarray]:
    """The board after clicking ``(x, y)`` and the cluster removed (bool ``[W, H]``), under
    ``geometry``'s rules; ``planes`` (``board``'s) are updated to the board after, so a line
    of clicks makes its geometry (~0.1 ms) and planes once."""
    width, height = board.shape
    cluster = np.uint64(bitboard.flood(np.uint64(1 << (x * height + y)), planes[board[x, y] - 1], geometry))
    bitboard.remove_in_place(planes, cluster, geometry)
    return bitboard.to_board(planes, width, height), bitboard.to_board(np.array([cluster]), width, height) != 0


def _beam_labels(config: DatasetConfig, board: np.ndarray) -> dict:
    clicks = beam_clicks(board, config.beam_width, config.game.colors, rules=config.game.rules)
    return {"clicks": [[int(x), int(y)] for x, y in clicks], "proven": [False] * len(clicks)}


def label_board(config: DatasetConfig, index: int) -> dict:
    """Solve board ``index`` and label every position along the final solution."""
    if config.labeller == "beam":
        return {"index": index, **_beam_labels(config, source_board(config, index))}

    table = TranspositionTable(20)  # fresh per board, shared by its positions

    def search(position):
        return solve(position, node_limit=config.node_limit, table=table, colors=config.game.colors,
                     rules=config.game.rules)

    position = source_board(config, index)
    planes = bitboard.to_planes(position, config.game.colors)
    geometry = bitboard.make_geometry(config.game.width, config.game.height, config.game.rules)
    result = search(position)
    clicks, lower_bounds = list(result.clicks), [result.lower_bound]
    tail_proven = result.optimal
    for step in range(1, len(clicks) + 1):
        x, y = clicks[step - 1]
        position, _ = _click(planes, geometry, position, x, y)
        if step == len(clicks):
            break
        if tail_proven:  # the rest of a shortest solution is shortest from here
            lower_bounds.append(len(clicks) - step)
            continue
        tail = search(position)
        lower_bounds.append(tail.lower_bound)
        if tail.length < len(clicks) - step:
            clicks[step:] = tail.clicks
        tail_proven = tail.optimal and tail.length == len(clicks) - step
    costs = [len(clicks) - step for step in range(len(clicks))]
    return {
        "index": index,
        "clicks": [[int(x), int(y)] for x, y in clicks],
        "proven": [cost == bound for cost, bound in zip(costs, lower_bounds)],
    }


def record_problem(config: DatasetConfig, record: dict) -> str | None:
    """What makes a journal record's fields other than ``label_board`` writes them (an
    index of the set, one proven flag for each ``[x, y]`` click), or None."""
    index, clicks, proven = record.get("index"), record.get("clicks"), record.get("proven")
    if not game.is_integer(index) or not 0 <= index < config.boards:
        return f"its index {index!r} is not a board of the set (0 to {config.boards - 1})"
    if not (isinstance(clicks, list) and isinstance(proven, list) and len(clicks) == len(proven)
            and all(isinstance(flag, bool) for flag in proven)
            and all(isinstance(c, list) and len(c) == 2 and all(map(game.is_integer, c)) for c in clicks)):
        return "its clicks and proven flags are not (x, y) pairs and booleans, one of each a click"
    return None


def samples_of(config: DatasetConfig, record: dict) -> list[tuple]:
    """``(board, clicked, cost_to_go, proven, step)`` for each position of a record.

    Raises:
      ValueError: naming what makes ``record`` other than a line ``label_board`` writes
        (the journal is replayed, not trusted): ``record_problem``, a click off the board or
        on an empty cell, or clicks that stop before the board is cleared. A data set's rules
        are fewest-clicks ones (``CLICK_RULES``), where any click on a cell is legal and
        every game ends cleared.
    """
    problem = record_problem(config, record)
    if problem:
        raise ValueError(problem)
    width, height, clicks = config.game.width, config.game.height, record["clicks"]
    position, samples = source_board(config, record["index"]), []
    planes = bitboard.to_planes(position, config.game.colors)
    geometry = bitboard.make_geometry(width, height, config.game.rules)
    for step, ((x, y), flag) in enumerate(zip(clicks, record["proven"])):
        if not (0 <= x < width and 0 <= y < height):
            raise ValueError(f"its click {step + 1}, ({x}, {y}), is off the {width}x{height} board")
        if not position.any():
            raise ValueError(f"its clicks go on after the board is cleared (click {step + 1} of {len(clicks)})")
        if position[x, y] == 0:
            raise ValueError(f"its click {step + 1}, ({x}, {y}), is on an empty cell")
        after, mask = _click(planes, geometry, position, x, y)
        samples.append((position, mask, len(clicks) - step, flag, step))
        position = after
    if position.any():
        raise ValueError(f"its {len(clicks)} clicks stop before the board is cleared")
    return samples


def _shard_bytes(config: DatasetConfig, records: list[dict], seen: PositionFilter) -> bytes:
    # A record's samples become arrays at once: a shard's positions held as Python tuples of
    # small arrays took ~2 KB each (26 KB a board of 8x6x5), 20 times their bytes.
    columns: dict[str, list[np.ndarray]] = {field: [] for field in Dataset._fields}
    for record in records:
        boards, clicked, cost_to_go, proven, step = zip(*samples_of(config, record))
        for field, values in (("boards", boards), ("clicked", clicked), ("cost_to_go", cost_to_go),
                              ("proven", proven), ("step", step)):
            columns[field].append(np.array(values, DATASET_DTYPES[field]))
        columns["board_id"].append(np.full(len(boards), record["index"], DATASET_DTYPES["board_id"]))
    arrays = {field: np.concatenate(parts) for field, parts in columns.items()}  # a board has a click at least
    fresh = seen.new(arrays["boards"])
    return _npz_bytes({name: array[fresh] for name, array in arrays.items()})


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """What ``np.savez_compressed`` writes, but with a fixed timestamp on each member
    (numpy stamps the current time), so equal data give byte-identical shards."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)
    return buffer.getvalue()


def _shard_name(shard: int) -> str:
    return f"shard-{shard:05d}.npz"


def _shard_path(directory: str, shard: int) -> str:
    return os.path.join(directory, _shard_name(shard))


class OtherSettings(ValueError):
    """A data set's directory holds one made with other settings (``differences`` names them)."""

    def __init__(self, directory: str, differences: str):
        super().__init__(f"{directory} holds a data set made with other settings ({differences}): give its "
                         "settings to go on with it, or another directory")
        self.directory, self.differences = directory, differences


def make_dataset(directory: str, config: DatasetConfig, jobs: int = 1, progress: bool = True,
                 announce: str | None = None) -> dict:
    """Create (or resume) a data set in ``directory``; returns its manifest. ``announce``
    is printed on stderr once the settings are known to match, if any board is left to label.

    A shard that cannot be read (truncated, deleted) is made again from the journal, with
    a warning, as are the shards after it.

    Raises:
      OtherSettings: ``directory`` holds a data set made with other settings (naming them).
      ValueError: ``directory`` a file, a journal without its manifest (whose settings are
        then unknown), other files and no data set in ``directory``, or another process
        making a data set there.
    """
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise ValueError(f"{directory} is a file, not a folder: give a new or empty folder")
    _require_no_other_files(directory)  # before the lock, which would leave its file there
    # One writer: a second would delete its temporaries. The wait outlasts another process's
    # look at the lock (files.held_by_another), not a writer.
    lock = files.lock_directory(directory, timeout=1.0)
    if lock is None:
        raise ValueError(f"another process is making a data set in {directory} (it holds {files.LOCK_FILE}): "
                         "wait for it to end, or use another directory")
    try:
        return _make_dataset(directory, config, jobs, progress, announce)
    finally:
        lock.release()


# A data set's folder holds one of these, finished or being made.
MARKER_FILES = ("manifest.json", "journal.jsonl")


def _require_no_other_files(directory: str) -> None:
    """ValueError where ``directory`` holds files but no data set: another command's output
    (evaluate.py's), which the set's files would mix with."""
    names = set(os.listdir(directory)) - {files.LOCK_FILE} if os.path.isdir(directory) else set()
    # A first manifest's temporary file, left by a run killed while writing it: this
    # module's own, removed under the lock (remove_leftover_temporaries), not another's.
    names = {name for name in names if not (name.startswith(files.TEMPORARY_PREFIX) and name.endswith("manifest.json"))}
    if names and not names & set(MARKER_FILES):
        others = sorted(names)
        raise ValueError(f"{directory} holds other files ({', '.join(others[:3])}{', ...' if len(others) > 3 else ''}) "
                         "and no data set: give a new or empty folder")


def _edited(journal_path: str, line: int, problem: str) -> ValueError:
    return ValueError(f"{journal_path}:{line} does not replay: {problem}; was it edited by hand? delete that line "
                      "(its board is then labelled again)")


def _make_dataset(directory: str, config: DatasetConfig, jobs: int, progress: bool, announce: str | None) -> dict:
    manifest_path = os.path.join(directory, "manifest.json")
    journal_path = os.path.join(directory, "journal.jsonl")
    settings = configs.to_json(config)
    if os.path.exists(manifest_path):
        manifest = _manifest(directory)
        made = _bearing(settings_as_written(manifest["config"]))
        if made != _bearing(settings):
            raise OtherSettings(directory, configs.differences(made, _bearing(settings)))
    elif os.path.exists(journal_path):
        raise ValueError(f"{directory} holds a journal.jsonl but no manifest.json, so the settings its boards were "
                         "labelled with are unknown: remove the folder, or use another")
    else:
        manifest = {"format": FORMAT_VERSION, "config": settings, "shards": [], "sha256": {}}
        files.atomic_write_json(manifest_path, manifest)

    files.remove_leftover_temporaries(directory)  # this run's to write now (its settings matched)
    num_shards = -(-config.boards // config.shard_size)
    seen = PositionFilter(config.game)
    before = json.dumps(manifest)
    digests = {}  # a set begun before 0.2.46 gains its shards' hashes, in shard order, as a new set has them
    for shard, name in enumerate(manifest["shards"]):  # rebuild the duplicate filter from finished shards
        try:
            arrays, digests[str(name)] = _read_shard(directory, name, manifest)
        except ValueError as error:
            print(f"warning: {error}; making it (and the shards after it) again from the journal", file=sys.stderr)
            manifest["shards"] = manifest["shards"][:shard]
            break
        seen.new(arrays["boards"])
    manifest["sha256"] = digests
    written = len(manifest["shards"])
    # Streamed, holding only the boards no shard holds yet: at 10^7 boards the whole
    # journal as records would take ~20 GB. Those kept become samples, so they are replayed.
    records, lines = {}, {}
    for line, record in enumerate(files.iter_json_lines(journal_path), start=1):
        problem = record_problem(config, record)
        if problem:
            raise _edited(journal_path, line, problem)
        if record["index"] >= written * config.shard_size:
            records[record["index"]], lines[record["index"]] = record, line  # a later line of a board wins
    for index, record in records.items():
        try:
            samples_of(config, record)
        except ValueError as error:
            raise _edited(journal_path, lines[index], str(error)) from None
    del lines
    if json.dumps(manifest) != before:  # after the checks: a refused resume changes nothing
        files.atomic_write_json(manifest_path, manifest)

    todo = [i for i in range(written * config.shard_size, config.boards) if i not in records]
    labelled_before = written > 0 or bool(records)
    versions = files.with_version(manifest.get(files.VERSIONS_KEY), __version__, earlier=labelled_before)
    if todo and manifest.get(files.VERSIONS_KEY) != versions:  # this version labels boards of the set
        manifest[files.VERSIONS_KEY] = versions
        files.atomic_write_json(manifest_path, manifest)
    labelled = 0  # the boards below it are labelled (in records, or in a written shard)

    def write_ready_shards(before_writing):
        # Called once a board: the scan resumes where it stopped, so a shard of n boards
        # costs n checks in all, not n^2 / 2.
        nonlocal written, labelled
        while written < num_shards:
            start, end = written * config.shard_size, min((written + 1) * config.shard_size, config.boards)
            labelled = max(labelled, start)
            while labelled < end and labelled in records:
                labelled += 1
            if labelled < end:
                return
            before_writing()
            data = _shard_bytes(config, [records.pop(i) for i in range(start, end)], seen)  # written: let go
            files.atomic_write_bytes(_shard_path(directory, written), data)
            name = _shard_name(written)
            manifest["shards"].append(name)
            manifest["sha256"][name] = hashlib.sha256(data).hexdigest()
            written += 1
            # Rewriting the whole manifest after every shard costs the square of their count
            # (hours at 10^5 shards); every MANIFEST_EVERY-th of the written count keeps it
            # linear. A shard written since is made again from the journal on a resume.
            if written == num_shards or written % max(1, written // MANIFEST_EVERY) == 0:
                files.atomic_write_json(manifest_path, manifest)

    # The journal's lines of a killed run may not be on the disk yet; a shard made of them must not be first.
    write_ready_shards(functools.partial(_sync_file, journal_path))
    if todo and announce:
        print(announce, file=sys.stderr)
    if todo and jobs > 1:
        compiled.compile_searches()  # once, here: the workers then load numba's cache
    with open(journal_path, "a") as journal, progress_bar(
        total=config.boards, initial=config.boards - len(todo), unit="board",
        file=sys.stderr, enabled=progress,
    ) as bar:
        synced = time.monotonic()

        def sync():  # the lines of a shard's boards are on the disk before the shard
            nonlocal synced
            os.fsync(journal.fileno())
            synced = time.monotonic()

        # In board order, so the journal is the same whatever --jobs (and after a resume).
        for record in ordered_map(functools.partial(label_board, config), todo, jobs):
            with files.errors_named(journal_path):
                journal.write(json.dumps(record) + "\n")
                journal.flush()  # a killed process loses no line the system has
            # On the disk a second at most after. An fsync a board took 0.3 ms, a fifth of a
            # board's width-4 beam labels on one core, in the one process that writes however
            # many label.
            if time.monotonic() - synced >= SYNC_SECONDS:
                sync()
            records[record["index"]] = record
            bar.update()
            write_ready_shards(sync)
        sync()
    return manifest


def _sync_file(path: str) -> None:
    """Put what the system holds of ``path`` on the disk."""
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _manifest(directory: str) -> dict:
    path = os.path.join(directory, "manifest.json")
    if not os.path.isfile(path):
        raise ValueError(f"{directory} is not a data set (no manifest.json)")
    try:
        with open(path, encoding="utf-8-sig") as handle:
            manifest = json.load(handle)
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} cannot be read ({error})") from None
    if not (isinstance(manifest, dict) and isinstance(manifest.get("config"), dict)
            and isinstance(manifest.get("shards"), list) and isinstance(manifest.get("sha256", {}), dict)):
        raise ValueError(f"{path} is not a data set's manifest")
    if manifest.get("format", FORMAT_VERSION) != FORMAT_VERSION:
        raise ValueError(f"{path} is of data-set format {manifest['format']!r}; this jaxdust reads format "
                         f"{FORMAT_VERSION}")
    for index, name in enumerate(manifest["shards"]):  # joined to the directory: nothing else may be read
        if name != _shard_name(index):
            raise ValueError(f"{path} lists shard {name!r} at place {index}, where {_shard_name(index)!r} belongs; "
                             "was it edited by hand?")
    return manifest


def _read_shard(directory: str, name: str, manifest: dict) -> tuple[dict[str, np.ndarray], str]:
    """A shard's arrays and sha256; ValueError naming it when it is missing or damaged, or
    its bytes are not those the manifest's ``sha256`` records (sets made before 0.2.46 record
    none until they are resumed)."""
    path = os.path.join(directory, str(name))
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        # NumPy allocates what an array's header claims before it reads a byte: a damaged
        # header of a small file could ask for terabytes. zlib packs at most ~1032 to 1.
        claimed = files.npz_claimed_bytes(io.BytesIO(data))
        if claimed > 1100 * len(data) + 2**20:
            raise ValueError(f"its arrays claim {claimed:,} bytes, more than {len(data):,} bytes can hold")
        with np.load(io.BytesIO(data)) as arrays:
            shard = {field: arrays[field] for field in Dataset._fields}
    # Bytes overwritten inside the compressed data fail in zlib (zlib.error is no OSError),
    # a damaged method or flag in zipfile (NotImplementedError, RuntimeError).
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError,
            RuntimeError) as error:
        raise ValueError(f"shard {path} cannot be read ({type(error).__name__}: {error})") from None
    digest, expected = hashlib.sha256(data).hexdigest(), manifest.get("sha256", {}).get(str(name))
    if expected is not None and digest != expected:
        # Shards are byte-identical for equal data, so other bytes are other data.
        raise ValueError(f"shard {path} is not the one its manifest lists (its sha256 differs: copied from "
                         "another set, or changed)")
    index = int(str(name)[len("shard-"):-len(".npz")])  # the manifest's names are checked (_manifest)
    problem = _shard_problem(shard, _config_of(directory, manifest), index)
    if problem:  # what a set without hashes (made before 0.2.46) has to go on
        raise ValueError(f"shard {path} is not this set's shard {index}: {problem}")
    return shard, digest


def _shard_problem(shard: dict[str, np.ndarray], config: DatasetConfig, index: int) -> str | None:
    """What in a shard's arrays cannot be shard ``index`` of ``config``'s set, or None."""
    boards, ids = shard["boards"], shard["board_id"]
    if boards.ndim != 3 or boards.shape[1:] != (config.game.width, config.game.height):
        return f"its boards are of shape {boards.shape[1:]}, not {config.game.width}x{config.game.height}"
    if any(shard[field].shape[:1] != boards.shape[:1] or shard[field].ndim != (3 if field == "clicked" else 1)
           for field in Dataset._fields if field != "boards"):
        return "its arrays are not those of one sample a row"
    if any(shard[field].dtype != dtype for field, dtype in DATASET_DTYPES.items()):
        return "its arrays are not of the types a data set holds (" + ", ".join(
            f"{field} {dtype.name}" for field, dtype in DATASET_DTYPES.items()) + ")"
    first = index * config.shard_size
    if len(ids) and (ids.min() < first or ids.max() >= first + config.shard_size or (np.diff(ids) < 0).any()):
        return f"its board ids are not boards {first} to {first + config.shard_size - 1} in order"
    # What training takes as labels, which nothing else checks: a hand-edited shard whose
    # sha256 was edited too trained on nonsense without a word.
    if (boards < 0).any() or (boards > config.game.colors).any():
        return f"its boards hold colours outside 0..{config.game.colors}"
    if (shard["cost_to_go"] < 1).any() or (shard["step"] < 0).any():
        return "its clicks left (cost_to_go) are not all 1 or more, or its steps not all 0 or more"
    clicked = shard["clicked"]
    if not clicked.any(axis=(1, 2)).all() or (clicked & (boards == 0)).any():
        return "its clicks are not each on cells of the board (one or more each)"
    return None


def settings_as_written(settings: dict) -> dict:
    """A data set's settings as saved (a manifest's ``config``, or a run's record of its
    data) as this version writes them, fields added since at their defaults, so that they
    compare with ``configs.to_json`` of a config; as given when this version cannot read
    them."""
    try:
        return configs.to_json(configs.from_json(DatasetConfig, settings))
    except (KeyError, TypeError, ValueError):
        return settings


def _bearing(settings: dict) -> dict:
    """Settings (``configs.to_json`` of a config) without the search limit of the labeller
    not used, which does not bear on the set (and which the data-set command cannot give)."""
    unused = "beam_width" if settings.get("labeller") == "exact" else "node_limit"
    return {name: value for name, value in settings.items() if name != unused}


def dataset_config(directory: str) -> DatasetConfig:
    """The settings a data set was made with (its board size and rules among them);
    ValueError when ``directory`` holds none."""
    return _config_of(directory, _manifest(directory))


def _config_of(directory: str, manifest: dict) -> DatasetConfig:
    try:
        return configs.from_json(DatasetConfig, manifest["config"])
    except (TypeError, KeyError) as error:
        raise ValueError(f"{directory}/manifest.json does not match this version of jaxdust ({error})") from None
    except ValueError as error:  # settings this version refuses (other rules, a range)
        raise ValueError(f"{directory}/manifest.json holds settings this version refuses: {error}") from None


def shards_done(directory: str, manifest: dict | None = None) -> tuple[int, int]:
    """``(finished, all)``: the shards a data set has written, of those its settings make."""
    manifest = manifest or _manifest(directory)
    config = _config_of(directory, manifest)
    return len(manifest["shards"]), -(-config.boards // config.shard_size)


def dataset_command(directory: str, config: DatasetConfig) -> str:
    """The command that makes ``config``'s data set in ``directory``, or goes on with it."""
    search = f"--node-limit {config.node_limit}" if config.labeller == "exact" else f"--beam-width {config.beam_width}"
    out = shlex.quote(directory)
    out = f"--out={out}" if directory.startswith("-") else f"--out {out}"  # else read as a flag
    return (f"python -m jaxdust.learn.datasets {out} --boards {config.boards} "
            f"--size {config.game.size_spec} --seed {config.seed} --labeller {config.labeller} {search} "
            f"--shard-size {config.shard_size}")


def require_finished(directory: str, manifest: dict | None = None) -> None:
    """ValueError, naming the command that finishes it, for a data set not finished: it
    would train on its first boards, and a resumed run on more."""
    manifest = manifest or _manifest(directory)
    done, total = shards_done(directory, manifest)
    if done < total and files.held_by_another(directory):
        raise ValueError(f"{directory} is not finished ({done} of {total} shards) and another process is making it "
                         f"(it holds {files.LOCK_FILE}): wait for it to end")
    if done < total:
        raise ValueError(f"{directory} is not finished ({done} of {total} shards): run "
                         f"{dataset_command(directory, _config_of(directory, manifest))} to finish it")


def load_dataset(directory: str, finished: bool = False) -> Dataset:
    """All samples of a data set, in board order: of every shard written so far, or with
    ``finished`` only of a finished one (``require_finished``).

    Raises:
      ValueError: no data set there, none of its shards written (or, with ``finished``,
        not all), or a shard that cannot be read (making the set again remakes it).
    """
    manifest = _manifest(directory)
    if finished:
        require_finished(directory, manifest)
    parts = []
    for name in manifest["shards"]:
        try:
            parts.append(_read_shard(directory, name, manifest)[0])
        except ValueError as error:
            raise ValueError(f"{error}: run {dataset_command(directory, _config_of(directory, manifest))} "
                             "to make it again") from None
    if not parts:
        raise ValueError(f"{directory} has no finished shards yet")
    return Dataset(**{field: np.concatenate([p[field] for p in parts]) for field in Dataset._fields})


def summary(directory: str, config: DatasetConfig) -> str:
    """One line on a data set's written shards: samples, the share proven, the mean
    solution. Read a shard and a journal line at a time: a set of 10^7 boards would take
    ~13 GB as samples and ~20 GB more as journal records."""
    manifest = _manifest(directory)
    samples = proven = 0
    first_lengths = []  # a board's step + cost-to-go at its first sample, in case the journal is lost
    for name in manifest["shards"]:
        shard, _ = _read_shard(directory, name, manifest)
        samples, proven = samples + len(shard["boards"]), proven + int(shard["proven"].sum())
        _, first = np.unique(shard["board_id"], return_index=True)  # a board's samples are in one shard
        first_lengths.append(shard["step"][first].astype(np.int64) + shard["cost_to_go"][first])
    # Every board's solution, from the journal: a start position kept once under the mirror
    # filter would leave its twin's out of the samples.
    boards = clicks = 0
    for record in files.iter_json_lines(os.path.join(directory, "journal.jsonl"), repair=False):
        boards, clicks = boards + 1, clicks + len(record["clicks"])
    counted = ""
    if boards != config.boards:  # the journal was lost (the shards were still whole): from the samples
        lengths = np.concatenate(first_lengths) if first_lengths else np.zeros(0, np.int64)
        boards, clicks = len(lengths), int(lengths.sum())
        counted = f" (over the {boards} boards with samples)" if boards != config.boards else ""
    return (f"{directory}: {samples} samples from {config.boards} boards, {proven / max(samples, 1):.1%} with proven "
            f"cost-to-go, mean solution {clicks / max(boards, 1):.2f} clicks{counted}")


def _flag_differences(made: DatasetConfig, asked: DatasetConfig) -> str:
    """How a data set's settings differ from those asked for, each named by the flag that
    sets it (``--boards 5, not 40; --size former:6x6x4, not 8x6x5``)."""
    # A search limit of a labeller one of them does not use is not named (--labeller is).
    bearing, asked_bearing = _bearing(configs.to_json(made)), _bearing(configs.to_json(asked))
    parts = [f"--{field.name.replace('_', '-')} {getattr(made, field.name)}, not {getattr(asked, field.name)}"
             for field in dataclasses.fields(DatasetConfig)
             if field.name in bearing and field.name in asked_bearing and field.name != "game"
             and getattr(made, field.name) != getattr(asked, field.name)]
    return "; ".join(parts + configs.board_differences(made.game, asked.game))


def build_parser() -> argparse.ArgumentParser:
    """``python -m jaxdust.learn.datasets``' command line (docs/cli.md shows its ``--help``)."""
    parser = flags.Parser(
        prog="python -m jaxdust.learn.datasets", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    defaults = DatasetConfig()
    parser.add_argument("--out", type=flags.output_dir, required=True,
                        help="directory; an existing run there is resumed")
    parser.add_argument("--boards", type=flags.positive_int, default=defaults.boards,
                        help=f"boards to label (default %(default)s; at most {MAX_BOARDS:,})")
    configs.add_board_flags(parser, f"width x height x colours of dust boards (default 8x6x5; at most "
                                    f"{bitboard.MAX_CELLS} cells, the solver's), or RULES:WxHxC (former:6x6x4)",
                            "a registered environment's rules and size, e.g. Former-7x9x4-v0 (fewest-clicks rules, "
                            f"at most {bitboard.MAX_CELLS} cells)", dest="game")
    # Any seed numpy takes: train.py seeds its run's set with the run's seed + 1, up to 2^32.
    parser.add_argument("--seed", type=flags.non_negative_int, default=defaults.seed, help="default %(default)s")
    parser.add_argument("--labeller", choices=("exact", "beam"), default=defaults.labeller, help="default %(default)s")
    parser.add_argument("--node-limit", type=flags.positive_int, default=None,
                        help=f"exact: positions per search (default {defaults.node_limit})")
    parser.add_argument("--beam-width", type=flags.positive_int, default=None,
                        help=f"beam: positions kept per click (default {defaults.beam_width})")
    parser.add_argument("--shard-size", type=flags.positive_int, default=defaults.shard_size,
                        help="boards per file (default %(default)s; each is made in memory, ~10 KB a board of "
                             "8x6x5)")
    parser.add_argument("--jobs", type=flags.positive_int, default=machine.cpu_cores(),
                        help="processes (default: the cores this process may use, %(default)s here)")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    unused = "--beam-width" if args.labeller == "exact" else "--node-limit"
    if (args.beam_width if args.labeller == "exact" else args.node_limit) is not None:
        flags.fail(parser, f"{unused} is not used by the {args.labeller} labeller")
    try:  # a refused value is named by its flag (the board's by --size/--env)
        config = configs.from_flags(args, DatasetConfig())
        make_dataset(args.out, config, jobs=args.jobs)
    except OtherSettings as error:
        try:
            made = dataset_config(error.directory)
        except ValueError as unreadable:  # settings this version cannot take: no command goes on with them
            flags.fail(parser, f"{unreadable}; give another --out")
        flags.fail(parser, f"{error.directory} holds a data set made with other settings "
                           f"({_flag_differences(made, config)}): go on with it by {dataset_command(args.out, made)}, "
                           "or give another --out")
    except ValueError as error:
        flags.fail(parser, str(error))
    except WorkerDied as error:  # the journal keeps the boards labelled so far
        print(f"{parser.prog}: error: {error}; the same command goes on from the boards labelled so far",
              file=sys.stderr)
        return 1
    print(summary(args.out, config))
    return 0


if __name__ == "__main__":
    sys.exit(flags.run_command(main, "the same command goes on from the boards labelled so far"))
