"""The pilot world: a small world in exactly the layouts paper-scale acquisition leaves, for the dress rehearsal of a
paper-scale run (config workflows/config/pilot.yaml).

It writes what the internet would serve into a local mirror (`hypvl.acquire.mirror`: each URL's file at `<host>/<path>`,
each Hub repository in a Hub cache), and where the manifest asks a human for a manual or a `prepare` step (an
account, img2dataset, a TFDS slice), it leaves in the dataset's folder what that step leaves. The workflow's acquire
jobs then fetch every dataset from the mirror through the real acquisition code. A stand-in file cannot match a
digest published for the real one, so the world also writes the manifest with each published digest replaced by
its stand-in's (`manifest.py`); everything else about the manifest is the real one.
"""
