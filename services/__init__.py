"""The capture side: sources (KRaft log, simulator, offset sampler), the Faust app, the archiver."""
