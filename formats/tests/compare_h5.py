"""Compare two scope-profiler HDF5 files dataset by dataset (dtype and values) and, when
the reference package is importable, the numbers it reports for both.

usage: compare_h5.py ORIGINAL OURS   -> prints "OK" or the differences, exit 1 on difference
"""

import sys

import h5py
import numpy as np


def datasets(path):
    out = {}
    with h5py.File(path, "r") as f:

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out[name] = (obj.dtype, obj[()])

        f.visititems(visit)
        out["<root attrs>"] = (None, {k: f.attrs[k] for k in f.attrs})
        if "metadata" in f:
            out["<metadata attrs>"] = (
                None,
                {k: f["metadata"].attrs[k] for k in f["metadata"].attrs},
            )
    return out


def same(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.names:
        return a.dtype == b.dtype and all(same(a[n], b[n]) for n in a.dtype.names)
    return a.shape == b.shape and bool(np.all(a == b))


def reference_view(path):
    import scope_profiler as sp

    r = sp.read_h5(path)
    view = {"num_ranks": r.num_ranks, "regions": {}}
    for name, mpi in r._region_dict.items():
        for rank, reg in mpi.regions.items():
            view["regions"][(name, rank)] = (
                list(np.asarray(reg.end_times_ns) - np.asarray(reg.start_times_ns)),
                None if reg.thread_ids is None else list(reg.thread_ids),
                None if reg.task_ids is None else list(reg.task_ids),
                reg.source_file,
                reg.source_lineno,
                tuple(reg.tags),
            )
    view["exclusive"] = {
        name: r.get_region(name)[0].exclusive_duration
        for name in r._region_dict
        if 0 in r._region_dict[name].regions
    }
    view["threads"] = {k: [repr(t) for t in v] for k, v in r.threads.items()}
    view["tasks"] = {k: [repr(t) for t in v] for k, v in r.tasks.items()}
    try:
        view["thread_summary"] = r.thread_summary(0)
    except Exception as exc:
        view["thread_summary"] = repr(exc)
    return view


def main():
    original, ours = sys.argv[1], sys.argv[2]
    a, b = datasets(original), datasets(ours)
    problems = []
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            problems.append(f"{name}: only in {'original' if name in a else 'ours'}")
            continue
        (da, va), (db, vb) = a[name], b[name]
        if da is not None and da != db:
            problems.append(f"{name}: dtype {da} vs {db}")
        elif not same(va, vb):
            problems.append(f"{name}: values differ\n  {va!r}\n  {vb!r}")
    try:
        import scope_profiler  # noqa: F401
    except ImportError:
        print("reference package not importable; compared datasets only")
    else:
        ra, rb = reference_view(original), reference_view(ours)
        for key in ra:
            if ra[key] != rb[key]:
                problems.append(f"reference read differs in {key}:\n  {ra[key]}\n  {rb[key]}")
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
