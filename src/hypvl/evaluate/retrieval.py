"""Zero-shot image-text retrieval (MERU Table 1, HyCoCLIP Table 2): COCO val2017 and Flickr30K Karpathy test.

Images are squeezed to the input size (resized ignoring the aspect ratio, as MERU does), or, for a public model
(OpenAI's and LAION's CLIPs, ALIGN: the HierarCaps paper's), viewed as its own preprocessing does, here as in every
image task (`DualEncoder.eval_view`: CLIP's shorter side resized and centre-cropped); every caption of the set is a
candidate. t2i: each caption queries the images, its one image is the positive; i2t:
each image queries the captions, any of its captions counts. Scores are the method's own similarity
(cosine; for MERU/HyCoCLIP the Lorentzian inner product, which ranks exactly as the negative distance
since d = acosh(-c<x, y>_L)/sqrt(c) and skips the acosh), computed once, a block of images at a time,
and reduced with batched top-K in both directions, so a 5k x 25k set never holds more than one (block, T)
block of scores.
"""

from collections.abc import Sequence

import torch

from hypvl.data.formats.common import CaptionedImage
from hypvl.data.formats.imagefolder import load_image
from hypvl.evaluate.context import EvalContext, TaskResult
from hypvl.evaluate.features import image_embeddings, text_embeddings
from hypvl.evaluate.metrics.retrieval import recall_at_k

KS = (1, 5, 10)
QUERY_BLOCK = 1024


@torch.no_grad()
def recalls(similarity, images: torch.Tensor, texts: torch.Tensor, owner: torch.Tensor,
            ks: Sequence[int] = KS) -> dict[str, float]:
    """t2i and i2t recall@K in percent from one pass over image blocks of the (I, T) similarity.

    owner: (T,) image index of each caption. Each block of QUERY_BLOCK images is scored against every
    caption once: its rows give i2t (`metrics.recall_at_k`, any of the image's captions counts), its
    columns are merged into each caption's running top-K images, from which t2i is read at the end.
    """
    num_images = len(images)
    counts = torch.bincount(owner, minlength=num_images)
    caption_ids = torch.full((num_images, int(counts.max())), -1, dtype=torch.long)
    order = torch.argsort(owner, stable=True)
    slot = torch.arange(len(owner)) - torch.repeat_interleave(torch.cumsum(counts, 0) - counts, counts)
    caption_ids[owner[order], slot] = order
    max_k = min(max(ks), num_images)
    top_scores = torch.empty(len(texts), 0)
    top_images = torch.empty(len(texts), 0, dtype=torch.long)
    i2t_hits = dict.fromkeys(ks, 0)
    for start in range(0, num_images, QUERY_BLOCK):
        scores = similarity(images[start:start + QUERY_BLOCK], texts)
        block = scores.shape[0]
        for k, value in recall_at_k(scores, caption_ids[start:start + block], ks).items():
            i2t_hits[k] += round(value * block / 100.0)
        merged = torch.cat([top_scores, scores.T], dim=1)
        candidates = torch.cat([top_images, torch.arange(start, start + block).expand(len(texts), block)], dim=1)
        best = merged.topk(min(max_k, merged.shape[1]), dim=1)
        top_scores, top_images = best.values, candidates.gather(1, best.indices)
    hit = top_images == owner[:, None]
    metrics = {f"t2i_r{k}": 100.0 * hit[:, :k].any(dim=1).double().mean().item() for k in ks}
    return metrics | {f"i2t_r{k}": 100.0 * i2t_hits[k] / num_images for k in ks}


@torch.no_grad()
def retrieval_embeddings(model, tokenizer, items: Sequence[CaptionedImage], image_size: int, batch_size: int,
                         name: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(I, D) embeddings of the images in the model's `eval_view`, (T, D) caption embeddings, (T,) image of
    each caption."""
    captions = [caption for item in items for caption in item.captions]
    owner = torch.tensor([index for index, item in enumerate(items) for _ in item.captions])
    images = image_embeddings(model, lambda i: load_image(items[i].image), len(items),
                              lambda img: model.eval_view(img, image_size, "squeeze"), batch_size, name)
    return images, text_embeddings(model, tokenizer, captions, batch_size, name), owner


def evaluate_retrieval(model, tokenizer, items: Sequence[CaptionedImage], image_size: int, batch_size: int,
                       name: str) -> TaskResult:
    """t2i_r{1,5,10} and i2t_r{1,5,10} in percent; n_samples = number of images."""
    images, texts, owner = retrieval_embeddings(model, tokenizer, items, image_size, batch_size, name)
    return TaskResult(recalls(model.ranking_score, images, texts, owner), len(items))


def run(ctx: EvalContext, task: str) -> TaskResult:
    """Tasks `ret_coco` (captions_val2017.json) and `ret_flickr30k` (Karpathy test split)."""
    if task == "ret_coco":
        from hypvl.data.formats.coco_captions import read_coco_captions

        items = read_coco_captions(ctx.dataset_path("coco_captions"))
    else:
        from hypvl.data.formats.flickr30k import read_flickr30k

        items = read_flickr30k(ctx.dataset_path("flickr30k"), split="test")
    return evaluate_retrieval(ctx.model, ctx.tokenizer, items, ctx.image_size, ctx.batch_size, task)
