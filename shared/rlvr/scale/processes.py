"""GRPO on several CPU processes: one `trl.GRPOTrainer` per rank, joined by torch.distributed's gloo backend.

`run_processes(model_dir, cfg)` starts cfg.processes ranks (spawned interpreters, the environment `torchrun` or
`accelerate launch` would set: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT). Every rank loads the same model folder,
generates answers for its share of each step's groups and scores them; TRL gathers the rewards, computes each group's
advantages and keeps its rank's slice; DDP all-reduces (averages) the gradients, so every rank takes the same Adam
step. Each rank writes what it saw to `rank<r>.json`, which the caller reads back as a `RankResult`.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from .trl_bridge import TRLRunConfig


@dataclass
class RankResult:
    """What one rank reports after training."""

    rank: int
    history: list[dict]  # per step, means over every rank (TRL's logs): think_share, accuracy, loss, reward, ...
    local_history: list[dict]  # per step, this rank's answers only
    prompts: list[list[str]]  # per step, the prompts this rank answered (each once per answer)
    step_seconds: list[float]  # wall time of each step on this rank
    parameter_hash: str  # sha256 of every parameter after training: equal on every rank
    threads: int  # torch threads of this rank


def free_port() -> int:
    """A TCP port that is free on this machine right now (for MASTER_PORT)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def parameter_hash(model) -> str:
    """sha256 of every parameter's bytes, in order: two models hash alike only if bit-identical."""
    digest = hashlib.sha256()
    for name, p in model.named_parameters():
        digest.update(name.encode())
        digest.update(p.detach().float().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def rank_environment(rank: int, world: int, port: int, threads: int) -> dict[str, str]:
    """The variables torchrun would set for this rank on one machine (accelerate reads them to start gloo)."""
    return {
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "WORLD_SIZE": str(world),
        "LOCAL_WORLD_SIZE": str(world),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "OMP_NUM_THREADS": str(threads),
    }


def run_rank(
    rank: int,
    world: int,
    port: int,
    threads: int,
    model_dir: str,
    cfg: TRLRunConfig,
    out_dir: str,
    save_dir: str | None,
) -> None:
    """One rank (runs in a spawned process): train from model_dir, write rank<r>.json, rank 0 saves the model."""
    os.environ.update(rank_environment(rank, world, port, threads))
    torch.set_num_threads(threads)
    from .hf_model import load_causal_lm, save_model
    from .trl_bridge import run_grpo

    model, tokenizer = load_causal_lm(model_dir)
    run = run_grpo(model, cfg, output_dir=str(Path(out_dir) / "trl"), tokenizer=tokenizer)
    result = RankResult(
        rank,
        run.history,
        run.local_history,
        run.prompts,
        run.step_seconds,
        parameter_hash(model),
        torch.get_num_threads(),
    )
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(asdict(result)))
    if save_dir is not None and rank == 0:
        save_model(model, tokenizer, save_dir)
    import torch.distributed as dist

    if dist.is_initialized():
        dist.barrier()  # nobody leaves while rank 0 is still saving
        dist.destroy_process_group()


def run_processes(model_dir, cfg: TRLRunConfig, out_dir=None, save_dir=None) -> list[RankResult]:
    """Train the model in model_dir with GRPO on cfg.processes CPU processes; one RankResult per rank.

    The ranks share this machine's torch threads (at least one each); `save_dir`, if given, gets rank 0's trained
    model. `out_dir` keeps the ranks' reports (default: a temporary folder).
    """
    import torch.multiprocessing as mp

    threads = max(1, torch.get_num_threads() // cfg.processes)
    with tempfile.TemporaryDirectory(prefix="rlvr-ranks-") as tmp:
        out = Path(out_dir or tmp)
        out.mkdir(parents=True, exist_ok=True)
        args = (
            cfg.processes,
            free_port(),
            threads,
            str(model_dir),
            cfg,
            str(out),
            None if save_dir is None else str(save_dir),
        )
        mp.start_processes(run_rank, args=args, nprocs=cfg.processes, join=True, start_method="spawn")
        return [RankResult(**json.loads((out / f"rank{r}.json").read_text())) for r in range(cfg.processes)]
