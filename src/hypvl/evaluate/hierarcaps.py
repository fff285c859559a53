"""HierarCaps hierarchical image-to-text matching (HierarCaps paper Sec. 6.1, App. B.5; HyCoCLIP Table 10).

The candidate texts are the distinct captions of all test rows (4 tiers each; generic tiers repeat, and a tier counts
as retrieved when its string is). Each distinct image is embedded (resized and centre-cropped; a public model: its own
preprocessing, as the released eval.py's processor) and scored once, against the captions of every row that shows it,
as the released eval.py does; tau_d is a mean over rows. (The released test CSV has one row per image.) For each
image, texts are retrieved at 50 radius levels (`metrics.hierarcaps_retrieved`) with the method's similarity and the
radial geometry of `radial` (Euclidean: the empty-string root; hyperbolic: the origin).
Both readings are recorded: `precision`, `recall`, `kendall_tau` follow the released code (global
levels from the minimum to the maximum text radius, nothing omitted, tau of the argsort), which
produced the paper's tables; `*_paper` follow the text (levels from the root to the text nearest the
image, the prediction nearest the root omitted, tau-b of the radii). P and R are fractions, tau in [-1, 1].
"""

from pathlib import Path

import torch

from hypvl.data.formats.hierarcaps import read_hierarcaps_test
from hypvl.data.formats.imagefolder import load_image
from hypvl.errors import InputError
from hypvl.evaluate.context import EvalContext, TaskResult
from hypvl.evaluate.features import image_embeddings, text_embeddings
from hypvl.evaluate.metrics.hierarcaps import hierarcaps_precision_recall, kendall_tau_d
from hypvl.evaluate.radial import entailment_root, radii

STEPS = 50


@torch.no_grad()
def evaluate_hierarcaps(ctx: EvalContext, path: Path, steps: int = STEPS, name: str = "hierarcaps") -> TaskResult:
    """P, R, tau_d (code variant, unsuffixed) and their `_paper` variants; n_samples = test rows."""
    items = read_hierarcaps_test(path)
    if not items:
        raise InputError(f"{path}: no test rows")
    texts = list(dict.fromkeys(caption for item in items for caption in item.captions))
    index = {text: i for i, text in enumerate(texts)}
    ground_truth = torch.tensor([[index[c] for c in item.captions] for item in items])
    model = ctx.model
    slot = {file: i for i, file in enumerate(dict.fromkeys(item.image for item in items))}
    files, image_of = list(slot), torch.tensor([slot[item.image] for item in items])
    images = image_embeddings(model, lambda i: load_image(files[i]), len(files),
                              lambda img: model.eval_view(img, ctx.image_size, "crop"), ctx.batch_size, name)
    text_embeds = text_embeddings(model, ctx.tokenizer, texts, ctx.batch_size, name)
    text_radii = radii(model, text_embeds, entailment_root(model, ctx.tokenizer))
    similarity = model.similarity(images, text_embeds)
    metrics = {}
    for variant, suffix in (("code", ""), ("paper", "_paper")):
        scores = hierarcaps_precision_recall(similarity, text_radii, ground_truth, variant=variant, steps=steps,
                                             image_of=image_of)
        metrics[f"precision{suffix}"] = scores["precision"]
        metrics[f"recall{suffix}"] = scores["recall"]
        metrics[f"kendall_tau{suffix}"] = kendall_tau_d(text_radii[ground_truth], variant=variant)
    return TaskResult(metrics, len(items))


def run(ctx: EvalContext, task: str) -> TaskResult:
    """Task `hierarcaps` on hierarcaps_test.csv."""
    return evaluate_hierarcaps(ctx, ctx.dataset_path("hierarcaps_test"))
