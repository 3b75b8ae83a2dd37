"""The DistributedDataParallel baseline: every worker's gradient all-reduced, no master (real mode only).

It is a policy in the scenario so it sits in every table and figure beside the coded variants, but no
master runs it: ``gcbench run`` starts n torch.distributed ranks that train with
``torch.nn.parallel.DistributedDataParallel`` (gcbench/real/ddp/ddp_run.py). ``gcbench simulate`` refuses it.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from gcbench.policies._base import AggregationPolicy
from gcbench.policies._registry import register_policy

POWERSGD_RANK = 1  # PowerSGDState's own default matrix_approximation_rank


@register_policy
class AllReduce(AggregationPolicy):
    """DistributedDataParallel's all-reduce of every worker's gradient (scheme uncoded; real mode only).

    ``hook`` is one of PyTorch's DDP communication hooks (torch.distributed.algorithms.ddp_comm_hooks):
    ``fp16`` or ``bf16`` compression, or ``powersgd`` with matrix approximation ``rank`` (default 1).
    """

    name: Literal["allreduce"] = "allreduce"
    hook: Literal["none", "fp16", "bf16", "powersgd"] = "none"
    rank: Annotated[int, Field(ge=1)] = POWERSGD_RANK

    synchronous: ClassVar[bool] = True
    needs_master: ClassVar[bool] = False  # the ranks all-reduce every gradient: nothing to wait for or decode
    real_only: ClassVar[bool] = True  # gcbench simulate refuses it: the simulator models a master

    @model_validator(mode="after")
    def _rank_for_powersgd(self) -> AllReduce:
        if self.rank != POWERSGD_RANK and self.hook != "powersgd":  # (run.json keeps the default with any hook)
            raise ValueError(
                f"rank is PowerSGD's matrix approximation rank, so it needs hook: powersgd, not {self.hook}"
            )
        return self

    def hook_for(self, compressor: Any) -> tuple[str, int]:
        """The hook (and PowerSGD rank) a variant with this policy and ``compressor`` (gcbench.compression) runs:
        the compressor's DDP form where it has one (fp16, bf16, PowerSGD with its own warm-started factors and
        error feedback, as PyTorch's hook), else this policy's ``hook``. ValueError, in a sentence, where the
        compressor has no DDP form or contradicts the hook."""
        name = compressor.name
        if name == "none":
            return self.hook, self.rank
        forms = {"fp16": ("fp16", POWERSGD_RANK), "bf16": ("bf16", POWERSGD_RANK)}
        if name == "powersgd" and not compressor.shared_factor and compressor.feedback:
            forms["powersgd"] = ("powersgd", compressor.rank)
        if name not in forms:
            why = "" if name != "powersgd" else " with shared_factor or without error feedback"
            raise ValueError(
                f"allreduce (DistributedDataParallel) has no form of {compressor.display_name}{why}: PyTorch's "
                "communication hooks give fp16, bf16 and powersgd (warm-started, with error feedback); give this "
                "variant compression: none, or one of those"
            )
        hook, rank = forms[name]
        if self.hook not in ("none", hook) or (self.hook == "powersgd" and self.rank != rank):
            raise ValueError(
                f"policy.hook {self.display_name} and compression {compressor.display_name} say different things; "
                "give one of them"
            )
        return hook, rank

    @property
    def display_name(self) -> str:
        """``allreduce``, ``allreduce(fp16)``, ``allreduce(powersgd,rank=2)``: what a variant's label shows."""
        if self.hook == "none":
            return self.name
        return f"{self.name}({self.hook}" + (f",rank={self.rank})" if self.hook == "powersgd" else ")")
