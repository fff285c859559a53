"""What every evaluation task receives: the model, its tokenizer, the eval config and where the data lives."""

from dataclasses import dataclass, field
from pathlib import Path

from hypvl.errors import InputError


@dataclass(frozen=True)
class TaskResult:
    """Metrics of one task (units as the papers print them) and the number of samples they cover."""

    metrics: dict[str, float]
    n_samples: int


@dataclass
class EvalContext:
    """One model under evaluation plus the config sections the tasks read.

    model: one of ours or a wrapped library model (`hypvl.models.clip.DualEncoder`) in eval mode; tokenizer:
    the model's own, texts -> (B, L) token ids; image_size: the model's input size; config: the workflow config (`scale`, `data_dir`, `eval`); prompts: the
    catalog's prompt set zero-shot classifiers are built from (the experiment's `eval_prompts`).
    """

    model: object
    tokenizer: object
    image_size: int
    config: dict
    prompts: str = "meru"
    _shared: dict = field(default_factory=dict, repr=False)

    def shared(self, key: str, compute):
        """`compute()` the first time `key` is asked for in this evaluation, the same value after: work several tasks
        of a group share (e.g. the ImageNet image embeddings of BREEDS and its single-prompt baselines)."""
        if key not in self._shared:
            self._shared[key] = compute()
        return self._shared[key]

    @property
    def scale(self) -> str:
        return self.config["scale"]

    @property
    def batch_size(self) -> int:
        return self.config["eval"]["batch_size"]

    def templates(self, dataset: str) -> list[str]:
        """The prompt templates of catalog dataset `dataset` in this evaluation's prompt set."""
        from hypvl.data.catalog import load_dataset_info

        return list(load_dataset_info(dataset).templates(self.prompts))

    def dataset_path(self, key: str) -> Path:
        """Path of eval dataset `key` (config `eval.datasets`) under `data_dir`."""
        datasets = self.config["eval"]["datasets"]
        if key not in datasets:
            raise InputError(f"config: eval.datasets has no {key!r} entry (known: {sorted(datasets)})")
        return Path(self.config["data_dir"]) / datasets[key]

    def classification_root(self, name: str) -> Path:
        """Root of classification set `name` (`<data_dir>/<classification_dir>/<name>`), its splits in either layout
        (`hypvl.data.formats.classification_split`)."""
        return Path(self.config["data_dir"]) / self.config["eval"]["classification_dir"] / name

    def linear_probe_root(self, name: str) -> Path:
        """Image-folder root of set `name`'s linear-probe train and val splits (`<data_dir>/<linear_probe_dir>/<name>`,
        built by `hypvl probe-splits`)."""
        return Path(self.config["data_dir"]) / self.config["eval"]["linear_probe_dir"] / name
