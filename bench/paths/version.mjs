console.log(JSON.stringify({ version: process.version }));
