"""Give the committed points made before records kept their environment the one the project's
history states for them, marked 'reconstructed', never 'measured'.

Nothing here is measured: each fact comes from a commit message, a stop note (`issues stops`),
docs/study.md, docs/benchmarks.md, benchmarks/results/*.json or issue 41 ("every committed
number was made with TF 2.21.0 and Keras 3.15.1"), and each point's `note` names its sources.
A fact no source states stays null (flags: empty) and the note says "not stated". The table
below was made by reading that history once (for each point, the commit that finished its
metrics.json: `git log -- results/fashion_mnist/points/NAME/metrics.json`); rerunning this
script rewrites the same bytes.

    python scripts/reconstruct_environments.py            # add the environments
    python scripts/reconstruct_environments.py --check    # exit 1 if a file would change
    python scripts/reconstruct_environments.py --verify-git  # also check the parents in git

Only the `environments` list of metrics.json changes, written as the suite writes records;
a point that already holds a measured environment is left alone.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # run as a file from anywhere: the suite's packages come from ROOT

from common import files  # noqa: E402
from experiments import environment, records  # noqa: E402
from experiments.records import Environment, PointRecord  # noqa: E402

RESULTS = os.path.join(ROOT, "results", "fashion_mnist")
# issue 41: "Every committed number was made with TF 2.21.0 and Keras 3.15.1"; no source states
# the others (environment.PACKAGES names every package a measured record holds)
PACKAGES = {**dict.fromkeys(environment.PACKAGES), "tensorflow": "2.21.0", "keras": "3.15.1"}
STACK = ("TF 2.21.0 and Keras 3.15.1 from issue 41's statement that every committed number was "
         "made with them; Python, NumPy, SciPy and TF-GAN versions not stated")
# the flags benchmarks/results/{peak,step_precision}.json recorded on the 2-core AMD EPYC
EPYC_FLAGS = ["avx2", "fma", "avx512f", "avx512_bf16"]
# docs/benchmarks.md's AMX Xeon block (AVX512_BF16, AMX_TILE and AMX_BF16 in /proc/cpuinfo)
# with AVX2/FMA/AVX512F from benchmarks/results/step_precision_amx.json
AMX_FLAGS = ["avx2", "fma", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"]
NOT_V2_EPYC = ("stop 30's note later says v2's seeds 0-2 ran on an AMD EPYC, but stop 16 puts "
               "seed 2 at batch 32-512 on a Xeon, so that claim is not used")

# what made each group of points: (label, CPU model, CPU flags, where the CPU facts come from,
# whether the run started from a snapshot of the code rather than a commit)
MACHINES = {
    "v2_1": ("reference run v2, sitting 1 of 3", None, ["avx512f"],
             "CPU model not stated: stop 14's note (the sitting that ran it) says only a 2-core "
             "machine with AVX-512 (so avx512f; other flags unknown); " + NOT_V2_EPYC, True),
    "v2_2": ("reference run v2, sitting 2 of 3", None, ["avx512f"],
             "CPU model not stated: this sitting's stop (15) left no note; docs/study.md says "
             "v2 ran in three sittings on 2-core AVX-512 machines (so avx512f; other flags "
             "unknown); " + NOT_V2_EPYC, True),
    "v2_3": ("reference run v2, sitting 3 of 3", "Intel Xeon", ["avx512f"],
             "CPU from stop 16's note (the sitting that ran seed 2 at batch 32-512: a new "
             "2-core AVX-512 Xeon); other flags not stated", True),
    "equal_images": ("study v3, equal-images control", "AMD EPYC", EPYC_FLAGS,
                     "CPU from docs/study.md (a quiet 2-core AMD EPYC with a measured conv peak "
                     "of 237 GFLOP/s) and stop 29's note; flags as benchmarks/results/peak.json "
                     "recorded them on the AMD EPYC with that peak", False),
    "more_seeds": ("study v3, seeds 3-5", "Intel Xeon", ["avx512f"],
                   "CPU from docs/study.md and stop 30's note (a 2-core Intel Xeon with "
                   "AVX-512); other flags not stated", False),
    "bfloat16": ("precision check", "AMD EPYC", EPYC_FLAGS,
                 "CPU from docs/study.md's precision check (2026-12-05/06, 2-core AMD EPYC with "
                 "AVX512_BF16) and stop 37's note; flags as "
                 "benchmarks/results/step_precision.json recorded them on that AMD EPYC", False),
    "constant_lr_epyc": ("study v4, constant lr", "AMD EPYC", EPYC_FLAGS,
                         "CPU from stop 37's note (a 2-core AMD EPYC with avx512_bf16 and no "
                         "AMX; it lists seeds 0 and 1 at batch 16-256 as committed); flags as "
                         "benchmarks/results/step_precision.json recorded them on the AMD EPYC",
                         False),
    "constant_lr_unstated": ("study v4, constant lr", None, [],
                             "machine not stated: neither the commit message nor a stop note "
                             "names it (stop 37's note lists this run as still to do, stop "
                             "38's names only bs0512_seed2_constant_lr's machine); CPU flags "
                             "unknown", False),
    "constant_lr_amx": ("study v4, constant lr", "Intel Xeon", AMX_FLAGS,
                        "CPU from the commit message (Intel Xeon AMX machine) and stop 38's "
                        "note (run on the AMX Xeon); flags as docs/benchmarks.md and "
                        "benchmarks/results/step_precision_amx.json state them for the 2-core "
                        "AMX Xeon", False),
    "lr_probe": ("study v4, lr probe", "Intel Xeon", AMX_FLAGS,
                 "CPU from the commit message (Intel Xeon AMX machine) and stop 39's note (a "
                 "2-core Intel Xeon with AMX: avx512_bf16, amx_bf16); flags as "
                 "docs/benchmarks.md and benchmarks/results/step_precision_amx.json state them "
                 "for the 2-core AMX Xeon", False),
}

# point -> (machine, the commit that finished its metrics.json, that commit's parent)
POINTS = {
    "bs0008_seed0": ("v2_1", "d4363252135a585888f404d6e3afe03e778b7d31",
                     "c8f648c7f5d610f38cfdb10d41f21c792c67ab56"),
    "bs0016_seed0": ("v2_1", "83087236eb023359dd45247942d99c70e56c13ef",
                     "f5d7db51f040ca8119c97578cb4c8e4dcd7fe970"),
    "bs0032_seed0": ("v2_1", "36b4bf5b2570ab957c933c9989647ad5502ad173",
                     "dc590426168cfc47aa1c06541d42bf309a03c553"),
    "bs0064_seed0": ("v2_1", "bb484b6e9b98e0780e78592644b253e3f3c32740",
                     "36b4bf5b2570ab957c933c9989647ad5502ad173"),
    "bs0128_seed0": ("v2_1", "a5ab6c0cc5102b94b8dafab6f8541eac9c7c9ec2",
                     "bb484b6e9b98e0780e78592644b253e3f3c32740"),
    "bs0256_seed0": ("v2_2", "eedb86720760b079e1bd93d2bcec2acb741a97e1",
                     "443c2ebbc222116c1ee59eb0aee128ebb90a4960"),
    "bs0512_seed0": ("v2_2", "31c8c3ceaca4e51031d574654ca77a9ac6d461c3",
                     "eedb86720760b079e1bd93d2bcec2acb741a97e1"),
    "bs0008_seed1": ("v2_2", "1cd12d089be9a7587cc9ceca8005bd375d2884c8",
                     "31c8c3ceaca4e51031d574654ca77a9ac6d461c3"),
    "bs0016_seed1": ("v2_2", "e3fa9319757c363450cd03097c215313dde10415",
                     "1cd12d089be9a7587cc9ceca8005bd375d2884c8"),
    "bs0032_seed1": ("v2_2", "01b4a6430c0eca93b42d6fc47469606a9f15d77f",
                     "e3fa9319757c363450cd03097c215313dde10415"),
    "bs0064_seed1": ("v2_2", "a6a79a856cc6c482c1a321b6f194e8f36e8c77b3",
                     "01b4a6430c0eca93b42d6fc47469606a9f15d77f"),
    "bs0128_seed1": ("v2_2", "7edd7ea434b8c4aa71d9f6f80bf1db626c59455a",
                     "a6a79a856cc6c482c1a321b6f194e8f36e8c77b3"),
    "bs0256_seed1": ("v2_2", "892b2a1cdb0fe080ab2283509bc44d2afd5d77c1",
                     "7edd7ea434b8c4aa71d9f6f80bf1db626c59455a"),
    "bs0512_seed1": ("v2_2", "b8b2f7c3a0e1a3480c221183fa21dbe867e79fb2",
                     "892b2a1cdb0fe080ab2283509bc44d2afd5d77c1"),
    "bs0008_seed2": ("v2_2", "f2f0406d08aa6b25dfd41183ff7d4a9d53d21d62",
                     "b8b2f7c3a0e1a3480c221183fa21dbe867e79fb2"),
    "bs0016_seed2": ("v2_2", "2b65990e6c68220c0fb87e7f098aedd68292439e",
                     "f2f0406d08aa6b25dfd41183ff7d4a9d53d21d62"),
    "bs0032_seed2": ("v2_3", "babf3e76022aa501d68dd37b3a7dd97d02d220b2",
                     "2b65990e6c68220c0fb87e7f098aedd68292439e"),
    "bs0064_seed2": ("v2_3", "686d17953204dd9b5cba0240e77dba3547ba660d",
                     "babf3e76022aa501d68dd37b3a7dd97d02d220b2"),
    "bs0128_seed2": ("v2_3", "ca961844aad408c8ada2867d716176aa4ad1e5c8",
                     "686d17953204dd9b5cba0240e77dba3547ba660d"),
    "bs0256_seed2": ("v2_3", "15b8fece5457aa02309c94abb3e1374a85c42f1b",
                     "ca961844aad408c8ada2867d716176aa4ad1e5c8"),
    "bs0512_seed2": ("v2_3", "a8237b382d54265182f68f3855865a7f8d23bb72",
                     "15b8fece5457aa02309c94abb3e1374a85c42f1b"),
    "bs0064_seed0_equal_images": ("equal_images", "b96ac142a1890a6f20d348e172645f0ac62589a1",
                                  "c266c02d4d222ae5a87a2f11691d61b78b033bb6"),
    "bs0064_seed1_equal_images": ("equal_images", "150c3635758bb0cd21d80093ac922f7bd5441ff6",
                                  "b96ac142a1890a6f20d348e172645f0ac62589a1"),
    "bs0064_seed2_equal_images": ("equal_images", "7f4ba2b92333f027f24491217b51149bb108e704",
                                  "150c3635758bb0cd21d80093ac922f7bd5441ff6"),
    "bs0064_seed3": ("more_seeds", "92be13ba80e22127fbb3d0abc2a872ffaf6e2f0a",
                     "ecc920fa7965dc5151b8fc8941b50101cc26a8c2"),
    "bs0512_seed3": ("more_seeds", "d88d949065549298a9ea6d29f57fe476fd29ef0d",
                     "61491e9a5b10980825bebdbd81fdfe17f715f288"),
    "bs0064_seed4": ("more_seeds", "0c2a9e81204da8974354f58e2833c110aaffed3b",
                     "d88d949065549298a9ea6d29f57fe476fd29ef0d"),
    "bs0512_seed4": ("more_seeds", "1b77add078052c6aa9171e530d0eeb5d1e9c3a45",
                     "7c4852b2fb859741c5ab3c93f2ebf57b873e9c6a"),
    "bs0064_seed5": ("more_seeds", "8ee3b57c347a58a0a084ce6685545341d1be5f66",
                     "1b77add078052c6aa9171e530d0eeb5d1e9c3a45"),
    "bs0512_seed5": ("more_seeds", "cc1b864cde4759725dbf8c5b833f5057641a906a",
                     "8ee3b57c347a58a0a084ce6685545341d1be5f66"),
    "bs0064_seed0_bfloat16": ("bfloat16", "00e1f7c826ede48a63ebf2445f31ecc6f2f21914",
                              "8ca0ee5e9883f2e9afac941524f2788521a7c61a"),
    "bs0064_seed1_bfloat16": ("bfloat16", "e53fd12b4dfdbd201f19227b027148329a578ab3",
                              "c42a11ab60bef97efa9174c30b6119dc1f7981a3"),
    "bs0064_seed2_bfloat16": ("bfloat16", "5d7f7c789857cc8aa19dac204cc1200471f648d0",
                              "e53fd12b4dfdbd201f19227b027148329a578ab3"),
    "bs0512_seed0_bfloat16": ("bfloat16", "52588e746ace8ed76eab7d54c10bc0e36f815d40",
                              "5d7f7c789857cc8aa19dac204cc1200471f648d0"),
    "bs0512_seed1_bfloat16": ("bfloat16", "49126832340399142d76e0ac48ed6deb23e8ea7d",
                              "52588e746ace8ed76eab7d54c10bc0e36f815d40"),
    "bs0512_seed2_bfloat16": ("bfloat16", "026875fae012aa9b24bcce584aba308649a67cc3",
                              "49126832340399142d76e0ac48ed6deb23e8ea7d"),
    "bs0016_seed0_constant_lr": ("constant_lr_epyc", "cd154c687a94eaae7e25c8c9b896ff3486226f81",
                                 "612261d18b2c85afe090f55ac0cc42851ea0cca9"),
    "bs0032_seed0_constant_lr": ("constant_lr_epyc", "1c97911eddfb86af0c861b757fb45710d1b1e3cf",
                                 "9c7905f4fe6790d72afd0f515b282923a2a22f9f"),
    "bs0064_seed0_constant_lr": ("constant_lr_epyc", "72230e8f78ff077df069291e1456a4c280cf6d68",
                                 "1c97911eddfb86af0c861b757fb45710d1b1e3cf"),
    "bs0128_seed0_constant_lr": ("constant_lr_epyc", "61fe2701d3ccf226f37ab7aaeba78f20e8ef6058",
                                 "72230e8f78ff077df069291e1456a4c280cf6d68"),
    "bs0256_seed0_constant_lr": ("constant_lr_epyc", "980eeba9a72fa859202807092c966a85daf36db7",
                                 "61fe2701d3ccf226f37ab7aaeba78f20e8ef6058"),
    "bs0016_seed1_constant_lr": ("constant_lr_epyc", "aded144532e9153b9d108bd8ff1a2d237e78a794",
                                 "980eeba9a72fa859202807092c966a85daf36db7"),
    "bs0032_seed1_constant_lr": ("constant_lr_epyc", "b389e9ef095e3c77fc9a28448db7b4088971792f",
                                 "aded144532e9153b9d108bd8ff1a2d237e78a794"),
    "bs0064_seed1_constant_lr": ("constant_lr_epyc", "259080960e6af72f06563263a95e33d8180f0a6c",
                                 "b389e9ef095e3c77fc9a28448db7b4088971792f"),
    "bs0128_seed1_constant_lr": ("constant_lr_epyc", "0efd7dc60dd2b0d9e3fe41de629600ee3f3d455e",
                                 "259080960e6af72f06563263a95e33d8180f0a6c"),
    "bs0256_seed1_constant_lr": ("constant_lr_epyc", "25f8bd3b1916e18070bad421302f39b65776ba77",
                                 "0efd7dc60dd2b0d9e3fe41de629600ee3f3d455e"),
    "bs0016_seed2_constant_lr": ("constant_lr_unstated",
                                 "af3a4d317b3c2b0eb6b02c916c564c994ad5d9f9",
                                 "25f8bd3b1916e18070bad421302f39b65776ba77"),
    "bs0032_seed2_constant_lr": ("constant_lr_unstated",
                                 "e49203ee2888276d3b83baa6bfc17363acf2cf6e",
                                 "af3a4d317b3c2b0eb6b02c916c564c994ad5d9f9"),
    "bs0064_seed2_constant_lr": ("constant_lr_unstated",
                                 "a2c48e7a10e63a4fec6a46c1a6c75c650799b9f4",
                                 "e49203ee2888276d3b83baa6bfc17363acf2cf6e"),
    "bs0128_seed2_constant_lr": ("constant_lr_unstated",
                                 "8b66e7f488440ce869e2f215ac17d87834e1598a",
                                 "a2c48e7a10e63a4fec6a46c1a6c75c650799b9f4"),
    "bs0256_seed2_constant_lr": ("constant_lr_unstated",
                                 "9dc10919e18b46908e2b13e80edfb50ffde2cb91",
                                 "8b66e7f488440ce869e2f215ac17d87834e1598a"),
    "bs0512_seed0_constant_lr": ("constant_lr_unstated",
                                 "c04a4e8ab49eba4fc34dce4983d54960b44d7c53",
                                 "080408c2e1573040958c88892b3f9e9dbba0852a"),
    "bs0512_seed1_constant_lr": ("constant_lr_unstated",
                                 "bbf1116ce58aa7dca8094c9ad27812f9b0db6e91",
                                 "c04a4e8ab49eba4fc34dce4983d54960b44d7c53"),
    "bs0512_seed2_constant_lr": ("constant_lr_amx", "67f329576c663bc05c99ffa04a32e69eedfba0c2",
                                 "c90f4580b34a6ef5eb7dae86f48df009c83a4496"),
    "bs0512_seed0_lr_probe": ("lr_probe", "49260ff713c7ba04254945a4f0b06a02a9d779c4",
                              "22fb18b14881f6d264cbed99a232e7b528c7341d"),
    "bs0512_seed1_lr_probe": ("lr_probe", "e4840b97ccb3c8fe12645056dd813120bac90662",
                              "49260ff713c7ba04254945a4f0b06a02a9d779c4"),
}


def devices(replicator: str, replicas: int) -> list[str]:
    """The devices config.json's replicator and the record's replica count imply (the
    project's machines have no GPU: docs/scale.md)."""
    if replicator == "default" and replicas == 1:
        return ["/job:localhost/replica:0/task:0/device:CPU:0"]
    raise SystemExit(f"no rule for the devices of replicator {replicator!r} with {replicas} "
                     "replicas; add one")


def reconstructed(name: str, replicator: str, replicas: int) -> Environment:
    machine, commit, parent = POINTS[name]
    label, cpu_model, cpu_flags, cpu_source, snapshot = MACHINES[machine]
    start = ("an earlier commit or a snapshot of the code, as stops 14 and 16 say for v2"
             if snapshot else "an earlier commit")
    note = (f"Reconstructed from the project's history, not measured: finished in commit "
            f"{commit[:7]} ({label}). {cpu_source}. {STACK}. suite_commit {parent[:7]} is the "
            f"parent of {commit[:7]}, a best estimate only (the run may have started from "
            f"{start}); whether its tree was dirty is not known. Devices and replicator from "
            f"config.json (train.replicator '{replicator}') and metrics.json (replicas "
            f"{replicas}), on a CPU since the project's machines have no GPU (docs/scale.md).")
    return Environment(source="reconstructed", started_at_step=0, suite_commit=parent,
                       suite_dirty=None, python=None, packages=dict(PACKAGES),
                       cpu_model=cpu_model, cpu_flags=list(cpu_flags),
                       devices=devices(replicator, replicas), replicator=replicator,
                       recorded_at=None, note=note)


def updated(point_dir: str) -> tuple[dict, bool]:
    """(metrics.json with its reconstructed environment, whether that changes the file)."""
    name = os.path.basename(point_dir)
    path = os.path.join(point_dir, records.METRICS)
    with open(path) as f:
        text = f.read()
    raw = json.loads(text)
    if any(e.get("source") == "measured" for e in raw.get("environments", [])):
        return raw, False  # a run recorded its own: nothing to reconstruct
    if name not in POINTS:
        raise SystemExit(f"{name}: not in this script's table; read its history and add it")
    with open(os.path.join(point_dir, records.CONFIG)) as f:
        replicator = json.load(f)["train"]["replicator"]
    env = reconstructed(name, replicator, int(raw["replicas"]))
    raw = {**raw, "environments": [env.to_dict()]}
    PointRecord.from_dict(raw)  # still a valid record
    return raw, files.to_json(raw) != text


def verify_git(names) -> list[str]:
    """The table's parents that git disagrees with (commits git does not have are skipped)."""
    wrong = []
    for name in names:
        _, commit, parent = POINTS[name]
        out = subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", "-q", commit + "^"],
                             capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip() != parent:
            wrong.append(f"{name}: the parent of {commit[:7]} is {out.stdout.strip()[:7]}")
    return wrong


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="?", default=RESULTS,
                        help="a sweep directory holding points/ (default: the committed one)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a metrics.json would change")
    parser.add_argument("--verify-git", action="store_true",
                        help="also check each point's parent commit against git")
    args = parser.parse_args(argv)
    root = os.path.join(args.results, "points")
    dirs = sorted(os.path.join(root, n) for n in os.listdir(root)
                  if os.path.exists(os.path.join(root, n, records.METRICS)))
    missing = sorted(set(POINTS) - {os.path.basename(d) for d in dirs})
    if missing and args.results == RESULTS:
        raise SystemExit(f"the table names points not in {root}: {', '.join(missing)}")
    changed = []
    for d in dirs:
        raw, differs = updated(d)
        if differs:
            changed.append(os.path.basename(d))
            if not args.check:
                files.atomic_write_json(os.path.join(d, records.METRICS), raw)
    wrong = (verify_git([n for n in map(os.path.basename, dirs) if n in POINTS])
             if args.verify_git else [])
    for line in wrong:
        print(line)
    verb = "would change" if args.check else "changed"
    print(f"{len(dirs)} points, {len(changed)} {verb}: {', '.join(changed) or 'none'}")
    return 1 if wrong or (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
